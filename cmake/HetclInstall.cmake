# What `cmake --install` puts under the prefix (GNUInstallDirs: lib may be lib64 or
# lib/<multiarch> where the platform says so):
#   bin/hetcl                          the CLI (links the in-tree archives: no libhetcl.so needed)
#   include/hetcl/*.h                  the public headers of the runtime, models and profiler
#   lib/libhetcl.so.<version>, .so.<major>, .so   the shared library
#   lib/libhetcl.a                     the static library
#   lib/pkgconfig/hetcl.pc             pkg-config (relocatable: the prefix is found from its place)
#   lib/cmake/hetcl/                   find_package(hetcl): hetcl::hetcl, hetcl::hetcl_static
#   share/hetcl/models/*.json          the model specs (hetcl bench model --model ...)
#   share/hetcl/schema/*.json          the JSON Schemas of hetcl's reports
#   share/doc/hetcl/examples/          the examples, buildable from there
include(CMakePackageConfigHelpers)

install(TARGETS hetcl_shared hetcl_static EXPORT hetclTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(_inc IN LISTS HETCL_PUBLIC_INCLUDE_DIRS)
  install(DIRECTORY ${_inc}/hetcl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endforeach()
file(GLOB _specs ${PROJECT_SOURCE_DIR}/models/*.json)
install(FILES ${_specs} DESTINATION ${CMAKE_INSTALL_DATADIR}/hetcl/models)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/schema/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hetcl/schema
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- CMake package ------------------------------------------------------------------------
set(HETCL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hetcl)
install(EXPORT hetclTargets NAMESPACE hetcl:: DESTINATION ${HETCL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hetclConfig.cmake.in
  ${CMAKE_BINARY_DIR}/hetclConfig.cmake INSTALL_DESTINATION ${HETCL_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/hetclConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/hetclConfig.cmake ${CMAKE_BINARY_DIR}/hetclConfigVersion.cmake
        DESTINATION ${HETCL_CMAKE_DIR})

# ---- pkg-config ---------------------------------------------------------------------------
# prefix is derived from the .pc file's own place (${pcfiledir}), so that the file stays right
# when `cmake --install --prefix DIR` or DESTDIR moves the tree.
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(HETCL_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(HETCL_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(HETCL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  # One ".." per component of LIBDIR, plus one for pkgconfig/.
  string(REGEX REPLACE "[^/]+" ".." _up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(HETCL_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
# hwloc is named by its flags, not by `Requires: hwloc`: Debian's hwloc.pc lists -ludev among
# its Libs.private, so `pkg-config --static` would ask for libudev.so, which libhwloc-dev does
# not install (libudev-dev is not one of its dependencies). libhetcl.a needs only -lhwloc.
set(HETCL_PC_HWLOC_CFLAGS "")
set(HETCL_PC_HWLOC_LIBS "-lhwloc")
if(NOT HWLOC_INCLUDE_DIR IN_LIST CMAKE_C_IMPLICIT_INCLUDE_DIRECTORIES)
  set(HETCL_PC_HWLOC_CFLAGS " -I${HWLOC_INCLUDE_DIR}")
endif()
get_filename_component(_hwloc_libdir "${HWLOC_LIBRARY}" DIRECTORY)
if(NOT _hwloc_libdir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  set(HETCL_PC_HWLOC_LIBS "-L${_hwloc_libdir} -lhwloc")
endif()
# libhetcl.a built with MPI needs it (Open MPI's pkg-config name for the C library).
set(HETCL_PC_MPI "")
if(HETCL_HAVE_MPI)
  set(HETCL_PC_MPI " mpi-c")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/hetcl.pc.in ${CMAKE_BINARY_DIR}/hetcl.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hetcl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
