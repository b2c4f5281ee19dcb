# The library that hetcl installs: libhetcl.so (SONAME libhetcl.so.<major>) and libhetcl.a, each
# holding the whole of hetcl: the runtime, the models, the profiler and the embedded kernels.
#
# Every source is compiled once, by the in-tree component archives that the CLI and the tests
# link (hetcl -> libhetcl_runtime.a, hetcl_models, hetcl_profiler, hetcl_clkernels); both
# installed libraries are made from those same objects ($<TARGET_OBJECTS>), so the components
# are built position-independent. Only HETCL_API symbols leave the shared library: everything
# is compiled with -fvisibility=hidden, and the export check (cmake/check_exports.cmake, a lint
# test) holds the symbol table to the public headers.
#
# In-tree names: hetcl_shared and hetcl_static, also reachable as hetcl::hetcl and
# hetcl::hetcl_static, the names that find_package(hetcl) gives an installed copy.
include(CheckCCompilerFlag)

# The version has two homes, project() and <hetcl/version.h> (for hetcl_version() and for
# programs that test HETCL_VERSION_*): they must agree.
file(STRINGS ${PROJECT_SOURCE_DIR}/runtime/include/hetcl/version.h _defs
     REGEX "^#define HETCL_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE "#define HETCL_VERSION_[A-Z]+ +([0-9]+)" "\\1" _parts "${_defs}")
list(JOIN _parts "." _header_version)
if(NOT _header_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "hetcl: project(VERSION ${PROJECT_VERSION}) in CMakeLists.txt and "
                      "runtime/include/hetcl/version.h (${_header_version}) disagree")
endif()

set(HETCL_COMPONENTS hetcl hetcl_clkernels)
foreach(_c hetcl_models hetcl_profiler)
  if(TARGET ${_c})
    list(APPEND HETCL_COMPONENTS ${_c})
  endif()
endforeach()
set(HETCL_PUBLIC_INCLUDE_DIRS "")
foreach(_dir runtime models profiler)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/include/hetcl)
    list(APPEND HETCL_PUBLIC_INCLUDE_DIRS ${PROJECT_SOURCE_DIR}/${_dir}/include)
  endif()
endforeach()

# GCC and Clang: with -fPIC, a call from inside the library to one of its own exported
# functions may not be inlined or bound locally, since another library could interpose the
# symbol; hetcl does not support that, so the components keep the code they had without -fPIC.
check_c_compiler_flag(-fno-semantic-interposition HETCL_HAVE_NO_SEMANTIC_INTERPOSITION)
set(_objects "")
foreach(_c IN LISTS HETCL_COMPONENTS)
  set_target_properties(${_c} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(HETCL_HAVE_NO_SEMANTIC_INTERPOSITION)
    target_compile_options(${_c} PRIVATE -fno-semantic-interposition)
  endif()
  list(APPEND _objects $<TARGET_OBJECTS:${_c}>)
endforeach()

# hetcl_add_whole_library(<target> SHARED|STATIC <export name>)
function(hetcl_add_whole_library target type export_name)
  add_library(${target} ${type} ${_objects})
  add_library(hetcl::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME hetcl EXPORT_NAME ${export_name} LINKER_LANGUAGE C
    ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  # What a program that includes <hetcl/...> needs: the headers, and the OpenCL version the
  # headers are written against (without it, <CL/cl.h> warns and assumes 3.0).
  foreach(_inc IN LISTS HETCL_PUBLIC_INCLUDE_DIRS)
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${_inc}>)
  endforeach()
  target_include_directories(${target} INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_definitions(${target} INTERFACE CL_TARGET_OPENCL_VERSION=120)
  # Public: the headers use OpenCL's, cJSON's and hwloc's types (and programs may call those
  # libraries on them). hwloc has no CMake package: in-tree hetcl_hwloc (cmake/HetclDeps.cmake),
  # installed hetcl::hwloc, which hetclConfig.cmake defines the same way. Private: only the
  # static library passes them on (as $<LINK_ONLY:...>).
  target_link_libraries(${target}
    PUBLIC OpenCL::OpenCL cjson $<BUILD_INTERFACE:hetcl_hwloc> $<INSTALL_INTERFACE:hetcl::hwloc>
    PRIVATE clblast ZLIB::ZLIB Threads::Threads ${LAPACKE_LIBRARY} ${LAPACK_LIBRARY} m ${CMAKE_DL_LIBS})
  if(HETCL_HAVE_MPI)
    target_link_libraries(${target} PRIVATE MPI::MPI_C)
  endif()
  if(HETCL_ONNX_ENABLED)
    target_link_libraries(${target} PRIVATE ${PROTOBUF_C_LIBRARY})
  endif()
endfunction()

hetcl_add_whole_library(hetcl_shared SHARED hetcl)
set_target_properties(hetcl_shared PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
# Every symbol the library uses must be resolved by the libraries it names (not left for the
# program to provide); sanitizer and fuzzer builds leave their runtime's symbols to the program.
if(NOT HETCL_SANITIZE AND NOT HETCL_FUZZ)
  target_link_options(hetcl_shared PRIVATE LINKER:--no-undefined)
endif()
hetcl_add_whole_library(hetcl_static STATIC hetcl_static)

# lint: the shared library exports exactly what the public headers declare with HETCL_API.
add_test(NAME lint_exports
  COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:hetcl_shared> -DNM=${CMAKE_NM}
          "-DHEADERS=${HETCL_PUBLIC_INCLUDE_DIRS}" -P ${CMAKE_CURRENT_LIST_DIR}/check_exports.cmake)
set_tests_properties(lint_exports PROPERTIES LABELS lint TIMEOUT 60)
# unit: cmake/git_commit.cmake names the commit in each of its cases (override, tarball, a
# checkout git refuses, a checkout without git).
add_test(NAME test_git_commit
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_BINARY_DIR}/git_commit_test
          -P ${CMAKE_CURRENT_LIST_DIR}/test_git_commit.cmake)
set_tests_properties(test_git_commit PROPERTIES LABELS unit TIMEOUT 60
                     SKIP_REGULAR_EXPRESSION "SKIPPED: ")
