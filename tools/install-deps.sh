#!/usr/bin/env bash
# Installs the Debian 12 packages hetcl needs to build, test and run its main job.
# Idempotent: installs only what is missing. Works as root or through sudo.
# HETCL_CROSS=aarch64 adds the aarch64 cross build of tools/cross_test.sh (CI sets it): the cross
# compiler, qemu-user and the arm64 -dev packages through multiarch (it enables arm64 in dpkg).
# Left out otherwise: about 60 packages that building and testing on this machine do not need.
set -euo pipefail

packages=(
  # build
  gcc make cmake
  # libraries (find_package in cmake/HetclDeps.cmake names the same packages)
  ocl-icd-opencl-dev opencl-headers libclblast-dev libhwloc-dev libcjson-dev zlib1g-dev
  # ONNX import (optional at configure time: cmake/HetclOnnx.cmake): protobuf-c, its compiler,
  # Debian's onnx.proto; and ONNX's own node tests, which tests/onnx runs
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
  # LAPACK's C interface: EigenPro's eigensystem of the kernel on its Nystrom subsample
  liblapacke-dev
  # the CPU OpenCL device used by tests and CI, and a tool to list OpenCL devices
  pocl-opencl-icd clinfo
  # the default dataset (/usr/share/datasets/fashion-mnist)
  dataset-fashion-mnist
  # tests: the OpenCL C syntax check of clkernels/*.cl, the format check, the sanitizer runtimes;
  # xmllint (libxml2-utils) checks that the HTML pages hetcl writes are well-formed XML: a real
  # XML parser catches what a hand-written checker would miss
  clang clang-format libclang-rt-14-dev libxml2-utils
  # the install check (tools/check_install.sh) builds the examples with pkg-config, as a user of
  # hetcl.pc would
  pkgconf
  # optional: training across nodes and the "mpi" allreduce (HETCL_WITH_MPI; the build works
  # without them), and mpirun for their tests
  libopenmpi-dev openmpi-bin
)
cross=${HETCL_CROSS:-}
case "$cross" in
  "") ;;
  aarch64)
    packages+=(gcc-aarch64-linux-gnu qemu-user-static
      ocl-icd-opencl-dev:arm64 libclblast-dev:arm64 libhwloc-dev:arm64 libcjson-dev:arm64
      zlib1g-dev:arm64 liblapacke-dev:arm64)
    ;;
  *)
    echo "install-deps: HETCL_CROSS: expected aarch64 (or unset), not '$cross'" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
if [ "$cross" = aarch64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${sudo[@]}" dpkg --add-architecture arm64
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}"
