#!/usr/bin/env bash
# Runs the commands that open devices in their own process (hetcl train, hetcl bench model; with
# ALL also bench ops and bench runtime) with the fake ICD (fake_icd.c) misbehaving as MODE next
# to the machine's PoCL, each with --timeout-ms.
#
#   run_workloads.sh HETCL FAKE_ICD_SO MODELS_DIR MODE [ALL]
#
# MODE is a HETCL_FAKE_ICD_MODE, or missing-lib (PoCL, and missing.icd naming a library that is
# not installed). Each command must exit 0, having run on the working devices (PoCL's, when
# there is one, and the host), and warn on stderr, in one line, that the broken device (or
# platform) was left out and why. No process may be left behind.
set -u

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 HETCL FAKE_ICD_SO MODELS_DIR MODE [ALL]" >&2
    exit 2
fi
hetcl=$1
fake_so=$2
models=$3
mode=$4
all=${5:-}
timeout_ms=${HETCL_ISOLATION_TIMEOUT_MS:-2000}
pocl_icd=/etc/OpenCL/vendors/pocl.icd

# What the warning must say, per mode.
case $mode in
crash-context) words="SIGSEGV) in clCreateContext" ;;
fail-context) words="clCreateContext: CL_DEVICE_NOT_AVAILABLE" ;;
fail-queue) words="clCreateCommandQueue: CL_OUT_OF_RESOURCES" ;;
fail-build) words="clBuildProgram" ;;
hang-devices) words="timed out after $timeout_ms ms" ;;
missing-lib) words="library libhetcl_not_installed.so not found" ;;
*)
    echo "run_workloads: unknown mode $mode" >&2
    exit 2
    ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hetcl-workloads.XXXXXX") || exit 1
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/vendors"
fake_mode=$mode
if [ "$mode" = missing-lib ]; then
    printf '%s\n' libhetcl_not_installed.so >"$tmp/vendors/missing.icd"
    fake_mode=ok
else
    printf '%s\n' "$fake_so" >"$tmp/vendors/fake.icd"
fi
have_pocl=false
if [ -f "$pocl_icd" ]; then
    cp "$pocl_icd" "$tmp/vendors/pocl.icd"
    have_pocl=true
fi

status=0
# run NAME RAN ARGS...: one command, with a wall-clock guard below the CTest timeout; RAN is an
# extended regular expression that its output matches when it ran on an OpenCL device.
run() {
    local name=$1 ran=$2
    shift 2
    env -u OCL_ICD_PLATFORM_SORT -u OCL_ICD_DEFAULT_PLATFORM -u OPENCL_LAYERS \
        -u OCL_ICD_ASSUME_ICD_EXTENSION -u OPENCL_VENDOR_PATH \
        OCL_ICD_VENDORS="$tmp/vendors" HETCL_FAKE_ICD_MODE="$fake_mode" \
        HETCL_ISOLATION_MARKER="$tmp" HETCL_CACHE_DIR="$tmp/cache" \
        timeout -s KILL 60 "$hetcl" "$@" --timeout-ms "$timeout_ms" \
        >"$tmp/$name.out" 2>"$tmp/$name.err"
    local rc=$?
    local ok=true
    if [ $rc -ne 0 ]; then
        echo "run_workloads: FAIL: hetcl $* exited with status $rc in mode $mode" \
            "(137: killed after 60 s; >128: died by signal rc-128)" >&2
        ok=false
    fi
    if ! grep -E "^hetcl: warning: OpenCL (device|platform) [^ ]+ .*left out: " "$tmp/$name.err" |
        grep -qF "$words"; then
        echo "run_workloads: FAIL: hetcl $* did not warn that the broken driver was left out" \
            "(a 'hetcl: warning: OpenCL ... left out: ...$words...' line)" >&2
        ok=false
    fi
    if $have_pocl && ! grep -qE "$ran" "$tmp/$name.out" "$tmp/$name.err"; then
        echo "run_workloads: FAIL: hetcl $* did not run on PoCL's device" >&2
        ok=false
    fi
    if ! $ok; then
        echo "---- stdout ----" >&2
        cat "$tmp/$name.out" >&2
        echo "---- stderr ----" >&2
        cat "$tmp/$name.err" >&2
        status=1
    fi
}

# The working OpenCL device ran: train's summary, bench model's progress and bench ops' name its
# id; bench runtime has OpenCL cases.
run train "^  p[0-9]+d[0-9]+ " \
    train --model "$models/mlp.json" --data synthetic:2000 --epochs 1 --devices all
run bench-model "on p[0-9]+d[0-9]+ " bench model --quick --model "$models/mlp.json"
if [ -n "$all" ]; then
    run bench-ops "^worker p[0-9]+d[0-9]+ " bench ops --only gemm --batch 1 --reps 1 --no-clblast
    run bench-runtime "^cl-independent " \
        bench runtime --host-tasks 100 --cl-tasks 100 --reps 1 --scheduler eager --workers 1
fi

# Every process hetcl started carries the marker; zombies have an empty environ.
left=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    left=""
    if [ -d /proc/self ]; then
        # shellcheck disable=SC2013 # /proc/<pid>/environ paths have no spaces
        for f in $(grep -lzxF "HETCL_ISOLATION_MARKER=$tmp" /proc/[0-9]*/environ 2>/dev/null); do
            pid=${f#/proc/}
            left="$left ${pid%/environ}"
        done
    fi
    [ -z "$left" ] && break
    sleep 0.2
done
if [ -n "$left" ]; then
    echo "run_workloads: FAIL: hetcl left processes behind:$left" >&2
    for pid in $left; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    status=1
fi
exit $status
