#!/usr/bin/env bash
# Runs `hetcl devices --json` with the fake ICD (fake_icd.c) misbehaving as MODE next to the
# machine's PoCL, and checks the output with check_devices_json.
#
#   run_isolation.sh HETCL FAKE_ICD_SO CHECKER MODE
#
# MODE is a HETCL_FAKE_ICD_MODE, or one of these vendor directories:
#   missing-lib    PoCL, and missing.icd naming a library that is not installed
#   two-crash      a.icd and b.icd, both the fake ICD in crash-load mode; no PoCL
#   crash-missing  the fake ICD in crash-load mode, and missing.icd; no PoCL
#
# Steps:
#   1. Baseline: hetcl with PoCL alone (when /etc/OpenCL/vendors/pocl.icd exists); every platform
#      that works there must still work next to the faulty driver.
#   2. hetcl with OCL_ICD_VENDORS=<dir holding fake.icd and a copy of pocl.icd> and
#      HETCL_FAKE_ICD_MODE=MODE: it must exit 0 and print JSON that check_devices_json accepts.
#      A fault costs at most one time limit: the run takes at most the baseline's time plus
#      1.5 x --timeout-ms (a driver that hangs while loading once cost two).
#   3. hetcl must leave no process behind (a hung driver call must be killed, not abandoned).
# The loader runs with its default settings: OCL_ICD_PLATFORM_SORT, OPENCL_LAYERS and the like
# are removed from the environment, since that default is what hetcl meets in the field.
set -u

if [ $# -ne 4 ]; then
    echo "usage: $0 HETCL FAKE_ICD_SO CHECKER MODE" >&2
    exit 2
fi
hetcl=$1
fake_so=$2
checker=$3
mode=$4
timeout_ms=${HETCL_ISOLATION_TIMEOUT_MS:-3000}
pocl_icd=/etc/OpenCL/vendors/pocl.icd

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hetcl-isolation.XXXXXX") || exit 1
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$tmp/base" "$tmp/vendors"
fake_mode=$mode
missing_lib=libhetcl_not_installed.so
case $mode in
missing-lib)
    printf '%s\n' "$missing_lib" >"$tmp/vendors/missing.icd"
    fake_mode=ok
    ;;
two-crash)
    printf '%s\n' "$fake_so" >"$tmp/vendors/a.icd"
    printf '%s\n' "$fake_so" >"$tmp/vendors/b.icd"
    fake_mode=crash-load
    ;;
crash-missing)
    printf '%s\n' "$fake_so" >"$tmp/vendors/fake.icd"
    printf '%s\n' "$missing_lib" >"$tmp/vendors/missing.icd"
    fake_mode=crash-load
    ;;
*)
    printf '%s\n' "$fake_so" >"$tmp/vendors/fake.icd"
    ;;
esac
if [ -f "$pocl_icd" ]; then
    cp "$pocl_icd" "$tmp/base/pocl.icd"
    case $mode in
    two-crash | crash-missing) ;;
    *) cp "$pocl_icd" "$tmp/vendors/pocl.icd" ;;
    esac
fi

now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# run_hetcl VENDORS_DIR OUT_JSON [ENV=VALUE...]: hetcl devices with a wall-clock guard below the
# CTest timeout, so that a hang is reported as such. Every process it starts carries the marker
# HETCL_ISOLATION_MARKER=<tmp>, by which step 3 finds what it left behind.
run_hetcl() {
    local vendors=$1 out=$2
    shift 2
    env -u OCL_ICD_PLATFORM_SORT -u OCL_ICD_DEFAULT_PLATFORM -u OPENCL_LAYERS \
        -u OCL_ICD_ASSUME_ICD_EXTENSION -u OPENCL_VENDOR_PATH -u HETCL_FAKE_ICD_MODE \
        OCL_ICD_VENDORS="$vendors" HETCL_ISOLATION_MARKER="$tmp" "$@" \
        timeout -s KILL 40 "$hetcl" devices --json --timeout-ms "$timeout_ms" >"$out"
}

expect=()
base_ms=0
if [ -f "$tmp/base/pocl.icd" ]; then
    t0=$(now_ms)
    if run_hetcl "$tmp/base" "$tmp/base.json" && base_ms=$(($(now_ms) - t0)) &&
        "$checker" "$tmp/base.json" --list-working \
        >"$tmp/working.txt"; then
        while IFS= read -r name; do
            expect+=(--expect-platform "$name")
            echo "run_isolation: works without the fake ICD: $name"
        done <"$tmp/working.txt"
    else
        echo "run_isolation: warning: hetcl devices fails with PoCL alone; not expecting PoCL" >&2
    fi
fi

case $mode in
two-crash | crash-missing) expect=() ;;
esac

t0=$(now_ms)
run_hetcl "$tmp/vendors" "$tmp/out.json" HETCL_FAKE_ICD_MODE="$fake_mode"
rc=$?
took_ms=$(($(now_ms) - t0))
status=0
if [ $rc -ne 0 ]; then
    echo "run_isolation: FAIL: hetcl devices exited with status $rc in mode $mode" \
        "(137: killed after 40 s; >128: died by signal rc-128)" >&2
    status=1
fi
limit_ms=$((base_ms + timeout_ms * 3 / 2))
echo "run_isolation: took $took_ms ms (PoCL alone: $base_ms ms; limit $limit_ms ms)"
if [ $took_ms -gt $limit_ms ]; then
    echo "run_isolation: FAIL: the fault cost more than one time limit: $took_ms ms, over" \
        "$base_ms ms (PoCL alone) + 1.5 x $timeout_ms ms" >&2
    status=1
fi
if [ -s "$tmp/out.json" ]; then
    "$checker" "$tmp/out.json" "$mode" --vendors "$tmp/vendors" ${expect[@]+"${expect[@]}"} ||
        status=1
else
    echo "run_isolation: FAIL: hetcl devices printed nothing in mode $mode" >&2
    status=1
fi

# Step 3: the marker is in the environment of every process hetcl started. Zombies have an empty
# environ and do not count; give a killed child a moment to be reaped.
leftovers() {
    local f pid found=""
    [ -d /proc/self ] || return 0
    # shellcheck disable=SC2013 # /proc/<pid>/environ paths have no spaces
    for f in $(grep -lzxF "HETCL_ISOLATION_MARKER=$tmp" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        found="$found $pid"
    done
    echo "$found"
}
left=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
    left=$(leftovers)
    [ -z "$left" ] && break
    sleep 0.2
done
if [ -n "$left" ]; then
    echo "run_isolation: FAIL: hetcl left processes behind:$left" >&2
    for pid in $left; do
        ps -o pid=,args= -p "$pid" >&2 || true
        kill -KILL "$pid" 2>/dev/null || true
    done
    status=1
fi

if [ $status -ne 0 ]; then
    echo "---- hetcl devices --json output (mode $mode) ----" >&2
    cat "$tmp/out.json" >&2
fi
exit $status
