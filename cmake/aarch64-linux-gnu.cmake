# Cross build for 64-bit Arm Linux (the edge boards' CPUs) with Debian's cross compiler
# (gcc-aarch64-linux-gnu) and the arm64 -dev packages installed through multiarch
# (dpkg --add-architecture arm64): their headers are in /usr/include, their libraries and CMake
# packages in /usr/lib/aarch64-linux-gnu, which CMake searches once CMAKE_LIBRARY_ARCHITECTURE
# is aarch64-linux-gnu (never the amd64 ones in /usr/lib/x86_64-linux-gnu).
# tools/cross_test.sh uses it; tests run under qemu-user through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Programs (protoc-c, clang for the kernel lint) are the build machine's; libraries, headers and
# packages only the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_ROOT_PATH /)

# qemu-aarch64 (Debian's qemu-user-static or qemu-user) runs the tests. The arm64 -dev packages
# bring libc6:arm64, so the arm64 dynamic loader and every library are at their multiarch paths
# and qemu needs no -L (QEMU_LD_PREFIX): with -L /usr/aarch64-linux-gnu (the cross toolchain's
# libc), qemu 7.2 hung in the first pthread_create of every threaded test.
find_program(HETCL_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(HETCL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${HETCL_QEMU_AARCH64})
endif()
