# HETCL_SANITIZE=address,undefined or HETCL_SANITIZE=thread instruments every target.
set(HETCL_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined | thread)")
if(HETCL_SANITIZE)
  set(_san -fsanitize=${HETCL_SANITIZE} -fno-omit-frame-pointer)
  if(HETCL_SANITIZE MATCHES "undefined")
    list(APPEND _san -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${_san})
  add_link_options(${_san})
  # -O1 in the sanitizer builds (their presets are Debug, -O0): the instrumented GEMM, eigen
  # solver and CLI runs take about half the time, which keeps CI's ASan and TSan stages within
  # the suite's 15 minutes; -O1 keeps frames and line numbers usable in the reports.
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    add_compile_options(-O1)
  endif()
endif()

# hwloc's PCI plugin dlopens libpciaccess and unloads it at topology destroy; LeakSanitizer then
# reports libpciaccess's global allocations as leaks from an "<unknown module>", which no
# suppression can name. Linking libpciaccess into sanitized programs keeps it loaded, so its
# globals stay reachable and our own leaks remain visible.
if(HETCL_SANITIZE MATCHES "address")
  find_library(HETCL_PCIACCESS NAMES pciaccess libpciaccess.so.0)
  if(HETCL_PCIACCESS)
    add_link_options(LINKER:--no-as-needed ${HETCL_PCIACCESS} LINKER:--as-needed)
  endif()
endif()
