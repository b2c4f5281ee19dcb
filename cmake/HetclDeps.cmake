# Finds every dependency the CMake way. A missing one stops configuration with the Debian package
# that provides it, so that the fix is one `apt-get install` away.
function(hetcl_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "hetcl: ${what} not found. On Debian 12: sudo apt-get install ${package} "
                        "(or run tools/install-deps.sh)")
  endif()
endfunction()

find_package(OpenCL QUIET)
hetcl_require(OpenCL_FOUND "OpenCL ICD loader and headers" "ocl-icd-opencl-dev opencl-headers")

find_package(CLBlast QUIET CONFIG)
hetcl_require(CLBlast_FOUND "CLBlast" "libclblast-dev")

find_package(cJSON QUIET CONFIG)
if(cJSON_FOUND AND NOT TARGET cjson)
  set(cJSON_FOUND FALSE)
endif()
hetcl_require(cJSON_FOUND "cJSON" "libcjson-dev")

find_package(ZLIB QUIET)
hetcl_require(ZLIB_FOUND "zlib" "zlib1g-dev")

# hwloc ships a pkg-config file only; find it directly so that pkg-config is not required.
find_path(HWLOC_INCLUDE_DIR hwloc.h)
find_library(HWLOC_LIBRARY hwloc)
if(HWLOC_INCLUDE_DIR AND HWLOC_LIBRARY)
  set(HWLOC_FOUND TRUE)
endif()
hetcl_require(HWLOC_FOUND "hwloc" "libhwloc-dev")
add_library(hetcl_hwloc INTERFACE)
target_include_directories(hetcl_hwloc INTERFACE ${HWLOC_INCLUDE_DIR})
target_link_libraries(hetcl_hwloc INTERFACE ${HWLOC_LIBRARY})

find_package(Threads REQUIRED)

# LAPACKE (EigenPro's eigensystem of the Nystrom subsample, models/src/eigenpro): the C
# interface and the reference LAPACK under it (liblapacke-dev pulls liblapack-dev).
find_path(LAPACKE_INCLUDE_DIR lapacke.h)
find_library(LAPACKE_LIBRARY lapacke)
find_library(LAPACK_LIBRARY lapack)
if(LAPACKE_INCLUDE_DIR AND LAPACKE_LIBRARY AND LAPACK_LIBRARY)
  set(LAPACKE_FOUND TRUE)
endif()
hetcl_require(LAPACKE_FOUND "LAPACKE" "liblapacke-dev")
add_library(hetcl_lapacke INTERFACE)
target_include_directories(hetcl_lapacke INTERFACE ${LAPACKE_INCLUDE_DIR})
target_link_libraries(hetcl_lapacke INTERFACE ${LAPACKE_LIBRARY} ${LAPACK_LIBRARY})

# MPI is optional: with it, hetcl_comm_create_mpi and the "mpi" allreduce work and training can
# span ranks under mpirun; without it, they answer HETCL_ERR_UNSUPPORTED and everything else is
# the same (the other allreduce methods run on in-process ranks).
option(HETCL_WITH_MPI "Build the MPI transport when MPI is found (libopenmpi-dev)" ON)
set(HETCL_HAVE_MPI FALSE)
if(HETCL_WITH_MPI)
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(HETCL_HAVE_MPI TRUE)
    # FindMPI's launcher (Open MPI refuses to start when reached through a /bin symlink of
    # /usr/bin, which a plain find_program may pick).
    set(HETCL_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    message(STATUS "hetcl: MPI found (${MPI_C_LIBRARIES}); the MPI transport is built")
  else()
    message(STATUS "hetcl: MPI not found; building without it (apt-get install libopenmpi-dev "
                   "openmpi-bin for multi-node training)")
  endif()
endif()
