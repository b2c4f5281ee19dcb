#!/usr/bin/env bash
# The whole test suite, as CI runs it (README, command 2):
#   1. the format check of every C source and header (clang-format);
#   2. a build with warnings as errors, and every test (unit, lint, kernel, opencl);
#   2b. the install check (tools/check_install.sh build): that build installed into a temporary
#      prefix, the examples built against it with find_package and pkg-config, shared and
#      static, and run; the installed CLI's and a `git archive` tarball's commit;
#   3. the same build under AddressSanitizer + UBSan, and the unit and OpenCL tests again;
#   4. the runtime and scheduler tests (tests/runtime, tests/sched), the training run with
#      failing devices (test_train_faults) and the SLIDE trainer (test_slide_train,
#      test_slide_cli, test_slide_cl: the rehash through the runtime) under ThreadSanitizer
#      (tests/tsan.supp names ICD and PoCL frames only);
#   5. every parser's libFuzzer target for a few seconds (tools/fuzz.sh);
#   6. with HETCL_CROSS=aarch64 (CI sets it), the aarch64 cross build and its unit tests that need
#      no OpenCL device under qemu-user (tools/cross_test.sh).
# Tests that need an OpenCL device are skipped (exit 77) where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# Tests in twice as many processes as CPUs: a fifth of the CPU time sat idle at one test a CPU
# (tests waiting on a hung device's timeout, on a child process, on PoCL's threads); on 2 cores
# the -Werror stage's tests took 90 s instead of 114. ThreadSanitizer's tests keep every CPU busy
# on their own: one and a half a CPU there (132 -> about 115 s).
test_jobs=$((jobs * 2))
tsan_jobs=$((jobs * 3 / 2)) # 1 on one CPU

echo "== format check"
git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

echo "== build (warnings are errors) and test"
cmake --preset dev >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$test_jobs" -LE perf  # perf: figures, run by hand

echo "== install: the libraries, pkg-config, find_package(hetcl) and the examples"
tools/check_install.sh build

echo "== AddressSanitizer + UBSan build and test"
cmake --preset asan-ubsan >/dev/null
cmake --build build-asan -j "$jobs"
# ICDs allocate at load and never free: tests/lsan.supp names their frames only, never ours.
# -LE lint: the include and export checks read sources and symbols, no instrumented code runs.
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$test_jobs" -L "unit|opencl|kernel" -LE lint

echo "== ThreadSanitizer build and the runtime, scheduler, failing-device and SLIDE training tests"
cmake --preset tsan >/dev/null
cmake --build build-tsan -j "$jobs" --target hetcl_rt_tests test_allreduce
# atexit_sleep_ms=0: TSan otherwise sleeps 1 s in every process at exit (hetcl forks its
# driver probes, and the CLI tests start hetcl dozens of times): about a third of the stage.
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp second_deadlock_stack=1 atexit_sleep_ms=0" \
  ctest --test-dir build-tsan --output-on-failure -j "$tsan_jobs" \
  -R '^test_(rt_|sched_|perfmodel$|trace$|dmda_public$|infer_team$|infer_kernel$|train_faults$|train_memory$|train_merge$|train_eigenpro$|eigenpro_devices$|allreduce$|train_dist_stop$|slide_train$|slide_cli$|slide_cl$)'

# 3 s a target here (9 targets), to keep the suite within 15 minutes on 2 cores; longer
# runs by hand: HETCL_FUZZ_SECONDS=600 tools/fuzz.sh NAME
export HETCL_FUZZ_SECONDS=${HETCL_FUZZ_SECONDS:-3}
echo "== fuzzing the parsers (${HETCL_FUZZ_SECONDS} s each)"
tools/fuzz.sh

if [ "${HETCL_CROSS:-}" = aarch64 ]; then
  echo "== aarch64 cross build, unit tests under qemu-user"
  tools/cross_test.sh
fi
