#!/bin/bash
# The GPU proof of hetcl on a borrowed machine with no network and none of our Debian packages
# (issue 16): one short script, since time there is minutes.
#
#   tools/gpu_proof.sh BUNDLE OUTDIR [proof|diag]
#
# proof (default): the figures of the issue; diag: what the OpenCL task path does on this
# driver (bench runtime, traced short training runs, forced GEMM variants, the GEMM choice
# table, and BUNDLE/diag/cldiag when the bundle has it: raw marker and callback timings).
#
# BUNDLE (made here by tools/gpu_bundle.sh) holds bin/hetcl (a release build), deb/ (the
# runtime libraries as Debian packages: OpenCL ICD loader, CLBlast, hwloc, cJSON) and
# data/fashion-mnist. The packages are unpacked with dpkg -x into a scratch root (never into /),
# NVIDIA's OpenCL driver is registered through OCL_ICD_VENDORS, and each step runs under its
# own time limit, so that one hanging step costs its limit and the others still run. Results:
# OUTDIR/proof.tar.gz (every JSON report and log) and a summary at the end of stdout.
set -u
B=$(cd "${1:?usage: gpu_proof.sh BUNDLE OUTDIR}" && pwd)
O=${2:?usage: gpu_proof.sh BUNDLE OUTDIR}
mode=${3:-proof}
R=$O/proof
mkdir -p "$R" /tmp/hetcl-root /tmp/hetcl-icd
for f in "$B"/deb/*.deb; do dpkg -x "$f" /tmp/hetcl-root; done
# libudev only where the machine lacks it: its own one stays first otherwise.
ldconfig -p | grep -q 'libudev\.so\.1 ' || for f in "$B"/deb-fallback/*.deb; do dpkg -x "$f" /tmp/hetcl-root; done
export LD_LIBRARY_PATH=/tmp/hetcl-root/usr/lib/x86_64-linux-gnu:/tmp/hetcl-root/lib/x86_64-linux-gnu
nv=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
[ -n "$nv" ] || nv=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
echo "${nv:-libnvidia-opencl.so.1}" >/tmp/hetcl-icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/hetcl-icd HETCL_DATA_DIR=$B/data HETCL_CACHE_DIR=/tmp/hetcl-cache
H=$B/bin/hetcl
M=$(cd "$(dirname "$0")/.." && pwd)/models

summary=()
step() { # step NAME SECONDS COMMAND...: runs it, logs it, notes its exit status
    local name=$1 limit=$2
    shift 2
    echo "=== $name: $*" | tee -a "$R/log.txt"
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@" >"$R/$name.out" 2>&1
    local rc=$?
    cat "$R/$name.out" >>"$R/log.txt"
    summary+=("$(printf '%-16s exit %3d  %4d s' "$name" "$rc" $((SECONDS - t0)))")
    printf '%s\n' "${summary[@]}" >"$R/steps.txt"
    tar -C "$O" -czf "$O/proof.tar.gz" proof # after every step: a call cut short keeps them
}

{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
    lscpu | grep -E 'Model name|^CPU\(s\)'
    echo "NVIDIA OpenCL: ${nv:-not found}"
    ldd "$H" | grep -E 'not found' || echo "every library of hetcl found"
} >"$R/machine.txt" 2>&1
cat "$R/machine.txt"

common=(--model "$M/mlp.json" --target-acc 0.88 --eval-every 0.1 --epochs 10 --time 40 --quiet)
if [ "$mode" = diag ]; then
    [ -x "$B/diag/cldiag" ] && step cldiag 60 "$B/diag/cldiag"
    step rt_gpu 90 "$H" bench runtime --workers 1 --scheduler eager --host-tasks 2000 --cl-tasks 500 --reps 3
    step ops_small 60 "$H" bench ops --devices opencl --batch 256 --only "mlp b256"
    step ops_small2 60 "$H" bench ops --devices opencl --batch 256 --only "mlp b256"
    cp /tmp/hetcl-cache/gemm/choices-v1.json "$R/choices.json" 2>/dev/null
    for v in clblast tiled naive; do
        step "ops_$v" 60 env HETCL_GEMM_VARIANT=$v "$H" bench ops --devices opencl --square 4096 \
            --batch 256 --only gemm
    done
    step trace_gpu 30 "$H" train --model "$M/mlp.json" --devices opencl --time 3 --quiet \
        --trace "$R/trace_gpu.json" --report "$R/train_gpu.json"
    step trace_all 30 "$H" train --model "$M/mlp.json" --devices all --time 3 --quiet \
        --trace "$R/trace_all.json" --report "$R/train_all.json"
    tar -C "$O" -czf "$O/proof.tar.gz" proof
    printf '%s\n' "${summary[@]}"
    exit 0
fi
common=(--model "$M/mlp.json" --target-acc 0.88 --eval-every 0.1 --epochs 10 --time 40 --quiet)
step devices 60 "$H" devices
step probe 90 "$H" devices --probe --json "$R/devices.json"
step cublas 60 python3 "$(dirname "$0")/bench_cublas.py" --square 1024,4096,8192 --batch 256,4096 \
    --json "$R/cublas.json"
step ops_gpu 100 "$H" bench ops --devices opencl --square 1024,4096,8192 --batch 256,4096 \
    --only gemm --json "$R/ops_gpu.json"
cp /tmp/hetcl-cache/gemm/choices-v1.json "$R/choices.json" 2>/dev/null
step ops_gpu_clblast 60 env HETCL_GEMM_VARIANT=clblast "$H" bench ops --devices opencl \
    --square 1024,4096,8192 --batch 256,4096 --only gemm
step ops_all 90 "$H" bench ops --json "$R/ops_all.json"
step runtime 60 "$H" bench runtime --scheduler eager,dmda --workers 1,16 --host-tasks 20000 \
    --cl-tasks 2000 --reps 5 --json "$R/runtime.json"
step train_all 55 "$H" train "${common[@]}" --algo adaptive --devices all --report "$R/train_all.json"
step train_gpu 55 "$H" train "${common[@]}" --algo adaptive --devices opencl --report "$R/train_gpu.json"
step train_hog 55 "$H" train "${common[@]}" --algo hogbatch --devices all --report "$R/train_hog.json"
step train_cpu 55 "$H" train "${common[@]}" --algo adaptive --devices host --report "$R/train_cpu.json"
# a GPU that fails mid-run (its 30th completion, injected): the run finishes on the others
step train_fault 55 env HETCL_INJECT_FAULTS=p0d0:complete=30 "$H" train "${common[@]}" \
    --algo adaptive --devices all --report "$R/train_fault.json"
[ -n "${HETCL_PROOF_SKIP_MODEL:-}" ] || step model 120 "$H" bench model --model "$M/mlp.json,$M/lenet.json" --batches 1,64 \
    --placements single,split,pipeline,auto --warmup-max-ms 1000 --min-time-ms 500 \
    --max-time-ms 1500 --min-requests 50 --accuracy-samples 0 --report "$R/bench_model.json"
# fp16 inference (cl_khr_fp16) against fp32 on the GPU (PoCL is not in the bundle: p0d0)
fp=(--model "$M/mlp.json" --batches 1,256 --quick --order as-given)
step model_fp32 60 "$H" bench model "${fp[@]}" --devices p0d0 --report "$R/bench_fp32.json"
step model_fp16 60 "$H" bench model "${fp[@]}" --precision fp16 --report "$R/bench_fp16.json"

echo
for name in model_fp32 model_fp16 ops_gpu ops_gpu_clblast cublas runtime; do
    echo "--- $name"
    tail -n 14 "$R/$name.out"
done
for name in train_all train_gpu train_hog train_cpu train_fault; do
    echo "--- $name"
    head -n 3 "$R/$name.out"
done
echo "--- model"
grep -v '^breakdown' "$R/model.out" | tail -n 45
echo "--- steps"
printf '%s\n' "${summary[@]}"
