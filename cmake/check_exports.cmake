# cmake -DLIB=<libhetcl.so> -DNM=<nm> -DHEADERS=<include dir;...> -P check_exports.cmake
# The shared library's dynamic symbol table against the public headers: every name declared
# HETCL_API in <hetcl/*.h> must be exported (or programs fail to link), and nothing else may be:
# no internal hetcl__ function, no helper that lost its `static`, no symbol of a bundled
# dependency. Fails with the names on each side.
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND "${NM}" -D --defined-only "${LIB}"
                OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIB} failed")
endif()
# "0000000000012340 T hetcl_version": code, data, read-only data and BSS, global or weak.
string(REGEX MATCHALL "[0-9a-f]+ [TDRBVWiu] [A-Za-z_][A-Za-z0-9_.]*" rows "${table}")
set(exported "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE "^[0-9a-f]+ . " "" name "${row}")
  list(APPEND exported ${name})
endforeach()
list(REMOVE_DUPLICATES exported)

# Declarations: HETCL_API, then everything up to the first "(" (a function) or ";" (a
# variable); the declared name is the last identifier before it. (The match leaves the "(" or
# ";" out: a ";" would split the list of matches.)
set(declared "")
foreach(dir IN LISTS HEADERS)
  file(GLOB headers "${dir}/hetcl/*.h")
  foreach(h IN LISTS headers)
    file(READ "${h}" text)
    string(REGEX MATCHALL "HETCL_API[^;(]*" decls "${text}")
    foreach(d IN LISTS decls)
      string(REGEX MATCH "([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n]*$" _ "${d}")
      set(name "${CMAKE_MATCH_1}") # the next MATCHES resets CMAKE_MATCH_1
      if(name MATCHES "^hetcl_")
        list(APPEND declared ${name})
      endif()
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES declared)
list(LENGTH declared n_declared)
if(n_declared LESS 10)
  message(FATAL_ERROR "found only ${n_declared} HETCL_API declarations under ${HEADERS}: "
                      "the pattern of this check no longer matches the headers")
endif()

set(missing ${declared})
if(exported)
  list(REMOVE_ITEM missing ${exported})
endif()
set(extra ${exported})
list(REMOVE_ITEM extra ${declared})
# Symbols that the toolchain adds to every shared library, and those of the implementation
# (a leading "__": __bss_start, AddressSanitizer's __odr_asan.<name>, ...).
list(FILTER extra EXCLUDE REGEX "^(_init|_fini|_edata|_end|__.*)$")
set(fail "")
if(missing)
  list(JOIN missing " " m)
  string(APPEND fail "declared HETCL_API in a public header but not exported: ${m}\n")
endif()
if(extra)
  list(JOIN extra " " e)
  string(APPEND fail "exported but not declared HETCL_API in a public header: ${e}\n")
endif()
if(fail)
  message(FATAL_ERROR "${LIB}:\n${fail}")
endif()
list(LENGTH exported n)
message(STATUS "${LIB}: exports exactly the ${n} HETCL_API names of the public headers")
