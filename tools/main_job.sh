#!/usr/bin/env bash
# hetcl's main job, end to end on the default data (README, command 1):
#   1. the device map, with each device's measured ceilings (hetcl devices --probe);
#   2. a short Adaptive Hogbatch training of models/mlp.json on Fashion-MNIST across every
#      device (hetcl train --algo adaptive), with a checkpoint;
#   3. an inference benchmark of the trained model on each device and split across them
#      (hetcl bench model), with the test accuracy beside the latency and throughput;
#   4. the HTML and Markdown renderings of each report (hetcl report).
# Usage: tools/main_job.sh [HETCL_BINARY] [OUTPUT_DIR] [EPOCHS]
set -euo pipefail
bin=${1:-build-release/hetcl}
out=${2:-hetcl-out}
epochs=${3:-3}
cd "$(dirname "$0")/.."
if [ ! -x "$bin" ]; then
  echo "main_job: $bin is not an executable hetcl (build it first, see README)" >&2
  exit 2
fi
mkdir -p "$out"

echo "== 1/4 device map and ceilings"
"$bin" devices --probe
"$bin" devices --json "$out/devices.json"

echo "== 2/4 Adaptive Hogbatch on Fashion-MNIST ($epochs epochs, every device)"
"$bin" train --model models/mlp.json --data fashion-mnist --algo adaptive --devices all \
  --epochs "$epochs" --report "$out/train.json" --checkpoint "$out/mlp.safetensors"

echo "== 3/4 inference benchmark of the trained model"
"$bin" bench model --model models/mlp.json --weights "$out/mlp.safetensors" \
  --data fashion-mnist --batches 1,64 --placements single,split \
  --scenarios single-stream,offline --min-time-ms 1000 --report "$out/bench.json"

echo "== 4/4 rendered reports"
for r in devices train bench; do
  "$bin" report "$out/$r.json" --format html --output "$out/$r.html"
  "$bin" report "$out/$r.json" --format md --output "$out/$r.md"
done

cat <<DONE

hetcl main job done. Reports:
  device map        $out/devices.json  ($out/devices.html)
  training          $out/train.json    ($out/train.html, $out/train.md)
  trained weights   $out/mlp.safetensors
  inference bench   $out/bench.json    ($out/bench.html, $out/bench.md)
Open the .html files in a browser; compare two runs with: $bin compare OLD.json NEW.json
DONE
