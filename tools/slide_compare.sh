#!/usr/bin/env bash
# SLIDE against its baselines on the same data for the same training time (issue 17): one
# `hetcl train` of a model with a slide layer for each active-set choice, each stopped after
# --time seconds of training (evaluations excluded), the same network in PyTorch with a full
# softmax (tools/slide_torch.py) for as long, then P@1 against training time, the ratios against
# the full softmax measured in the same run, and the time each run took to reach the full
# softmax's P@1 after its first epoch.
#
#   tools/slide_compare.sh [-m MODEL] [-n EXAMPLES] [-f PREFIX] [-t SECONDS] [-j THREADS]
#                          [-l LR] [-o DIR] [-T] [-S] [-F]
#
#   -m  the model (default models/slide-xc.json)
#   -n  training examples to generate (default: 2 per output); with 2,000 test examples, written
#       as LIBSVM files by tools/slide_xc_libsvm.py at the model's sizes (features, labels)
#   -f  train on PREFIX.train.libsvm and test on PREFIX.test.libsvm instead (e.g. an Extreme
#       Classification Repository dataset converted to that name)
#   -t  training seconds per run (default 300)
#   -j  threads for every run (default 2)
#   -l  learning rate (default: hetcl's, 5e-3, for every run)
#   -o  where the data and reports go (default a temporary directory, removed)
#   -T  leave out the PyTorch run
#   -S  leave out the sampled softmax run
#   -F  leave out hetcl's full softmax run (at 200k outputs it runs a few examples/s: the P@1
#       target then comes from PyTorch's full softmax after one epoch, so give -t room for one)
#
# The runs: lsh (SLIDE), sampled (sampled softmax: the labels plus uniform random outputs, as many
# as SLIDE's mean active set, so both compute the same number of neurons), full (every output,
# the same sparse code), torch (PyTorch, full softmax: OPENBLAS_CORETYPE=SkylakeX and
# OPENBLAS_NUM_THREADS=1 unless set, torch.set_num_threads(-j)). Each evaluates P@1 on the first
# 2,000 test examples at the end of every epoch and when its time is up (torch also every quarter
# epoch). Timings on a machine that others load are noise: run it on a quiet one (lscpu and
# uptime are printed).
set -euo pipefail
cd "$(dirname "$0")/.."
model=models/slide-xc.json n="" prefix="" secs=300 threads=2 lr="" outdir="" torch=1 sampled=1 full=1
while getopts "m:n:f:t:j:l:o:TSF" opt; do
  case $opt in
    m) model=$OPTARG ;; n) n=$OPTARG ;; f) prefix=$OPTARG ;; t) secs=$OPTARG ;;
    j) threads=$OPTARG ;; l) lr=$OPTARG ;; o) outdir=$OPTARG ;; T) torch=0 ;;
    S) sampled=0 ;; F) full=0 ;;
    *) echo "usage: tools/slide_compare.sh [-m MODEL] [-n EXAMPLES] [-f PREFIX] [-t SECONDS] [-j THREADS] [-l LR] [-o DIR] [-T] [-S] [-F]" >&2; exit 2 ;;
  esac
done
hetcl=${HETCL:-build/hetcl}
[ -x "$hetcl" ] || { echo "slide_compare.sh: $hetcl not found (build it, or set HETCL)" >&2; exit 2; }
if [ -z "$outdir" ]; then outdir=$(mktemp -d); trap 'rm -rf "$outdir"' EXIT; fi
mkdir -p "$outdir"
if [ -z "$prefix" ]; then
  read -r features labels < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["input"]["shape"][0], m["layers"][-1]["units"])' "$model")
  prefix=$outdir/xc
  echo "== tools/slide_xc_libsvm.py $prefix --n ${n:-$((2 * labels))} --features $features --labels $labels" >&2
  /usr/bin/python3 tools/slide_xc_libsvm.py "$prefix" --n "${n:-$((2 * labels))}" --test 2000 \
    --features "$features" --labels "$labels"
fi
for f in "$prefix.train.libsvm" "$prefix.test.libsvm"; do
  [ -r "$f" ] || { echo "slide_compare.sh: $f: not readable" >&2; exit 2; }
done
data=libsvm:$prefix.train.libsvm
extra=(--test-data "libsvm:$prefix.test.libsvm" --time "$secs" --test-limit 2000 --quiet
       --host-workers "$threads")
[ -n "$lr" ] && extra+=(--lr "$lr")

lscpu | grep -E 'Model name|^CPU\(s\)' || true
uptime
run() { # NAME SELECT
  echo "== $1: hetcl train --model $model --data $data --select $2 ${extra[*]}" >&2
  "$hetcl" train --model "$model" --data "$data" --select "$2" "${extra[@]}" \
    --report "$outdir/$1.json" >"$outdir/$1.txt"
}
run lsh lsh
active=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["slide"]["active_set"]["mean"]))' "$outdir/lsh.json")
[ "$sampled" = 1 ] && run sampled "sampled:$active"
[ "$full" = 1 ] && run full full
if [ "$torch" = 1 ]; then
  echo "== torch: tools/slide_torch.py --model $model --time $secs --threads $threads" >&2
  /usr/bin/python3 tools/slide_torch.py --model "$model" --train "$prefix.train.libsvm" \
    --test "$prefix.test.libsvm" --epochs 1000 --time "$secs" --threads "$threads" \
    ${lr:+--lr "$lr"} --out "$outdir/torch.json" >"$outdir/torch.txt"
fi

/usr/bin/python3 tools/slide_compare_summary.py "$outdir"
