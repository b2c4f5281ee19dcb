#!/bin/bash
# The OpenCL task path on a borrowed GPU machine (issue 16): two builds of hetcl alternately in
# one run (bench runtime three times each, bench ops at batch 64, a short traced GPU-only
# train), so that the ratios compare like with like. Results and traces go to $OUT (or ./).
#
#   tools/gpu_taskpath.sh BUNDLE
#
# BUNDLE: bin/base and bin/new (the two hetcl builds), deb/ and deb-fallback/ as made by
# tools/gpu_bundle.sh (the runtime libraries as Debian packages, unpacked into /tmp/r).
set -u
G=$(cd "${1:?usage: gpu_taskpath.sh BUNDLE}" && pwd)
M=$(cd "$(dirname "$0")/.." && pwd)/models
OUT=${OUT:-$PWD}
mkdir -p /tmp/r /tmp/icd
for f in "$G"/deb/*.deb; do dpkg -x "$f" /tmp/r; done
ldconfig -p | grep -q 'libudev\.so\.1 ' || for f in "$G"/deb-fallback/*.deb; do dpkg -x "$f" /tmp/r; done
export LD_LIBRARY_PATH=/tmp/r/usr/lib/x86_64-linux-gnu:/tmp/r/lib/x86_64-linux-gnu
nv=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
[ -n "$nv" ] || nv=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
echo "${nv:-libnvidia-opencl.so.1}" >/tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd HETCL_CACHE_DIR=/tmp/hc
cd "$OUT"
nvidia-smi -L; lscpu | grep 'Model name'
timeout 60 "$G/bin/new" devices 2>&1 | head -8
for r in 1 2 3; do for v in base new; do
  timeout 40 "$G/bin/$v" bench runtime --scheduler eager --workers 1 --host-tasks 200 --reps 5 \
     --json rt_${v}_$r.json >rt_${v}_$r.txt 2>&1; echo "== rt $v $r rc=$?"
  grep -E '^cl-|baselines' rt_${v}_$r.txt
done; done
for v in base new; do
  timeout 70 "$G/bin/$v" bench ops --devices opencl --batch 64 --reps 10 --no-clblast \
     --json ops_$v.json >ops_$v.txt 2>&1; echo "== ops $v rc=$?"; tail -25 ops_$v.txt
done
for v in base new; do
  timeout 40 "$G/bin/$v" train --model "$M/mlp.json" --data synthetic:4096 --devices opencl \
     --epochs 1 --time 15 --quiet --report train_$v.json --trace trace_$v.json >train_$v.txt 2>&1
  echo "== train $v rc=$?"; tail -8 train_$v.txt; gzip -f trace_$v.json
done
