#!/usr/bin/env bash
# SLIDE against its two baselines on the same data for the same training time (issue 17): one
# `hetcl train` of a model with a slide layer for each active-set choice, each stopped after
# --time seconds of training (evaluations excluded), then P@1 against training time from their
# reports, and the ratios against the full softmax measured in the same run.
#
#   tools/slide_compare.sh [-m MODEL] [-d DATA] [-t SECONDS] [-j THREADS] [-l LR] [-o DIR]
#
#   -m  the model (default models/slide-xc.json)
#   -d  its --data (default xc: the generator at the model's sizes)
#   -t  training seconds per run (default 300)
#   -j  host threads (default: every online CPU)
#   -l  learning rate (default: hetcl's)
#   -o  where the reports go (default a temporary directory, removed)
#
# The runs: lsh (SLIDE), sampled (sampled softmax: the labels plus uniform random outputs, as many
# as SLIDE's mean active set, so both compute the same number of neurons), full (every output,
# the same sparse code). Each run evaluates P@1 on the test set (--test-limit 2000 examples) at
# the end of every epoch and when its time is up; the table lists those points.
# Timings on a machine that others load are noise: run it on a quiet one (lscpu is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
model=models/slide-xc.json data=xc secs=300 threads="" lr="" outdir=""
while getopts "m:d:t:j:l:o:" opt; do
  case $opt in
    m) model=$OPTARG ;; d) data=$OPTARG ;; t) secs=$OPTARG ;; j) threads=$OPTARG ;;
    l) lr=$OPTARG ;; o) outdir=$OPTARG ;;
    *) echo "usage: tools/slide_compare.sh [-m MODEL] [-d DATA] [-t SECONDS] [-j THREADS] [-l LR] [-o DIR]" >&2; exit 2 ;;
  esac
done
hetcl=${HETCL:-build/hetcl}
[ -x "$hetcl" ] || { echo "slide_compare.sh: $hetcl not found (build it, or set HETCL)" >&2; exit 2; }
if [ -z "$outdir" ]; then outdir=$(mktemp -d); trap 'rm -rf "$outdir"' EXIT; fi
mkdir -p "$outdir"
extra=(--time "$secs" --test-limit 2000 --quiet)
[ -n "$threads" ] && extra+=(--host-workers "$threads")
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
run sampled "sampled:$active"
run full full

python3 - "$outdir" <<'EOF'
import json, sys
d = sys.argv[1]
runs = {n: json.load(open(f"{d}/{n}.json")) for n in ("lsh", "sampled", "full")}
print(f"\n{'run':8} {'train s':>8} {'P@1':>7} {'P@5':>7}  (one row per evaluation)")
for n, r in runs.items():
    for e in r["epochs"]:
        print(f"{n:8} {e['train_s']:8.1f} {e['p_at_1']:7.4f} {e['p_at_5']:7.4f}")
print(f"\n{'run':8} {'epochs':>7} {'ex/s':>8} {'active':>8} {'cand.recall':>11} {'P@1':>7} {'vs full':>8}")
full = runs["full"]["slide"]["p_at_1"]
for n, r in runs.items():
    s, f = r["slide"], r["final"]
    cand = "-" if s["candidate_recall"] is None else f"{s['candidate_recall']:.3f}"
    done = r["devices"][0]["examples"] / max(1, r["config"]["dataset"]["n_train"])
    ratio = f"{s['p_at_1'] / full:.2f}x" if full > 0 else "-"
    print(f"{n:8} {done:7.2f} {f['examples_per_s']:8.0f} {s['active_set']['mean']:8.0f} "
          f"{cand:>11} {s['p_at_1']:7.4f} {ratio:>8}")
EOF
