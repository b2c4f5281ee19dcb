#!/usr/bin/env bash
# The aarch64 cross build and the unit tests that need no OpenCL device, run under qemu-user:
# hetcl builds for the edge boards' 64-bit Arm CPUs with Debian's cross compiler and the arm64
# -dev packages (multiarch), and its host code, including the NEON micro-kernels of the host
# GEMM and direct convolution, passes its tests there.
#   HETCL_CROSS=aarch64 tools/install-deps.sh   # the cross compiler, qemu-user, arm64 packages
#   tools/cross_test.sh
# The CMake preset cross-aarch64 (cmake/aarch64-linux-gnu.cmake) builds into build-aarch64;
# CTest runs each test through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR). Only the targets
# below are built, to keep this stage short in CI (2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  echo "cross_test: aarch64-linux-gnu-gcc not found: run HETCL_CROSS=aarch64 tools/install-deps.sh" >&2
  exit 1
fi
if ! command -v qemu-aarch64-static >/dev/null 2>&1 && ! command -v qemu-aarch64 >/dev/null 2>&1
then
  echo "cross_test: qemu-aarch64 not found: run HETCL_CROSS=aarch64 tools/install-deps.sh" >&2
  exit 1
fi

# Unit tests that need neither an OpenCL device nor a second aarch64 program (qemu-user runs one
# program; the CLI and schema tests exec hetcl or a checker, which the host kernel cannot run
# without binfmt_misc): the host operators and their kernels (NEON) and the host workers, the
# reference, files, specs, weights and data readers, the lowering and training logic, the hwloc
# device map (XML topologies, the big.LITTLE CPU kinds), the scheduler's models and threads, and
# the profiler's report logic. Left out as too slow under emulation for this stage: test_stats
# (~8 s native, over 60 s under qemu), test_infer_team, test_train_run, test_train_conv.
tests=(
  test_host_gemm test_host_conv test_host_conv_direct test_host_ops test_host_pool test_host_f16
  test_host_runtime
  test_ref test_status test_text test_fileio test_fileio_targets
  test_model_spec test_weights_safetensors test_data_idx test_data_libsvm test_data_csv
  test_data_ops test_net_lower test_infer_plan test_train_logic test_train_net test_train_data
  test_devmap test_core_latency test_perfmodel test_trace test_rt_depth test_sched_policies
  test_rt_context_ext test_rt_concurrency
  test_bench_logic test_bench_report test_render
)

cmake --preset cross-aarch64 >/dev/null
cmake --build build-aarch64 -j "$jobs" --target "${tests[@]}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
ctest --test-dir build-aarch64 --output-on-failure -j "$jobs" -R "$regex"
# Every test listed ran (a renamed test would otherwise drop out of the regex unnoticed).
n=$(ctest --test-dir build-aarch64 -N -R "$regex" | sed -n 's/^Total Tests: //p')
if [ "$n" != "${#tests[@]}" ]; then
  echo "cross_test: ${#tests[@]} tests listed, CTest knows $n of them" >&2
  exit 1
fi
