#!/usr/bin/env bash
# Builds the libFuzzer targets of every parser with clang, ASan and UBSan, and runs each for a
# short time from its seed corpus:
#   models/fuzz:   idx, libsvm, csv, spec, safetensors, checkpoint (the training checkpoint),
#                  onnx (the ONNX reader; only when hetcl is built with protobuf-c)
#   profiler/fuzz: report (hetcl report: reading and rendering), compare (hetcl compare:
#                  reading, matching, rendering every format)
#   tools/fuzz.sh            # 10 s per target (what CI runs)
#   HETCL_FUZZ_SECONDS=600 tools/fuzz.sh idx    # longer, one target
# New interesting inputs go to a scratch copy of the corpus, never into the repository; a crash
# leaves its reproducer (crash-*) in build-fuzz/findings/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HETCL_FUZZ_SECONDS:-10}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(idx libsvm csv spec safetensors checkpoint report compare)
  # the ONNX reader is built where protobuf-c is (cmake/HetclOnnx.cmake decides the same way)
  command -v protoc-c >/dev/null 2>&1 && [ -f /usr/include/onnx/onnx.proto ] && targets+=(onnx)
fi

# The component whose fuzz/ folder holds a target.
component() {
  case "$1" in
  report | compare) echo profiler ;;
  *) echo models ;;
  esac
}

cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)" \
  --target "${targets[@]/#/fuzz_}"
for t in "${targets[@]}"; do
  comp=$(component "$t")
  work=build-fuzz/findings/$t
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp -r "$comp"/fuzz/corpus/"$t"/. "$work/corpus/"
  echo "== fuzz_$t for ${seconds}s"
  (cd "$work" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
     ../../"$comp"/fuzz_"$t" -max_total_time="$seconds" -print_final_stats=0 \
     -rss_limit_mb=2048 corpus 2>&1 | tail -n 1)
done
