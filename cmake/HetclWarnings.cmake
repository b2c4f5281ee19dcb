# Warning flags (ggml's and Lua's lists). HETCL_WERROR turns them into errors: ON in CI and the
# dev preset, OFF by default so that packagers with newer compilers are not broken.
option(HETCL_WERROR "Treat compiler warnings as errors" OFF)
set(HETCL_WARNING_FLAGS
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wold-style-definition -Wpointer-arith -Wcast-qual -Wundef -Wformat=2
  -Wdouble-promotion -Werror=implicit-function-declaration -Wvla
  # Fixed-size description fields (device names, reasons) truncate on purpose.
  $<$<C_COMPILER_ID:GNU>:-Wno-format-truncation>)
if(HETCL_WERROR)
  list(APPEND HETCL_WARNING_FLAGS -Werror)
endif()
function(hetcl_target_warnings target)
  target_compile_options(${target} PRIVATE ${HETCL_WARNING_FLAGS})
endfunction()
