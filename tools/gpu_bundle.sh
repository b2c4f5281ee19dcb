#!/bin/bash
# Makes the bundle that tools/gpu_proof.sh runs on a borrowed GPU machine with no network:
#
#   tools/gpu_bundle.sh BUILD_DIR BUNDLE
#
# BUNDLE/bin/hetcl (the CLI of a release build), BUNDLE/deb (the runtime libraries' Debian
# packages, apt-get download: the machine has none of them) and BUNDLE/data/fashion-mnist.
# PoCL is left out: it needs LLVM and clang (about 50 MB), and the host workers are the CPU
# side of training there.
set -eu
build=${1:?usage: gpu_bundle.sh BUILD_DIR BUNDLE}
out=${2:?usage: gpu_bundle.sh BUILD_DIR BUNDLE}
mkdir -p "$out/bin" "$out/deb" "$out/deb-fallback" "$out/data"
cp "$build/hetcl" "$out/bin/hetcl"
(cd "$out/deb" && apt-get download ocl-icd-libopencl1 libclblast1 libhwloc15 libcjson1 2>/dev/null)
(cd "$out/deb-fallback" && apt-get download libudev1 2>/dev/null)
cp -r /usr/share/datasets/fashion-mnist "$out/data/"
du -sh "$out"
