#!/usr/bin/env bash
# The dependency rules of ARCHITECTURE.md, checked on every #include of the tree:
#   1. layers: runtime <- models <- profiler <- tools and examples. A public header
#      <hetcl/X.h> belongs to the component whose include/hetcl/ holds it; a file may include
#      the public headers of its own layer and the layers below, never above (the runtime
#      never includes models or profiler, models never the profiler, and so on);
#   2. the internal seam <hetcl_internal/...> is for the library's components only;
#   3. tools/ and examples/ use public headers only: never OpenCL, CLBlast, hwloc or the
#      embedded kernel sources, never a component's src/ header;
#   4. quoted includes stay inside their component: no "../", and a header named *_impl.h is
#      private to its folder (and the folders below it);
#   5. device code (runtime/src/device) never includes the task graph (runtime/src/rt,
#      <hetcl/runtime.h>).
# Tests (tests/) may include anything: they are white-box where they need to be. Fuzz targets
# (<component>/fuzz/) keep to rules 1-3 but, like tests, may reach a folder's *_impl.h.
# Usage: tools/check_includes.sh [REPO_ROOT]; prints one line per violation, exits 1 if any.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

declare -A owner    # public header name -> layer number
declare -A layer_of=([runtime]=0 [models]=1 [profiler]=2 [tools]=3 [examples]=3)
for comp in runtime models profiler; do
  for h in "$comp"/include/hetcl/*.h; do
    [ -e "$h" ] && owner[$(basename "$h")]=${layer_of[$comp]}
  done
done
layer_name=(runtime models profiler "tools/examples")

violations=0
report() {
  echo "$1:$2: #include $3: $4"
  violations=$((violations + 1))
}

# The tracked sources; outside a git checkout (a tarball), every source below those folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files 'runtime/*.[ch]' 'models/*.[ch]' 'profiler/*.[ch]' 'tools/*.[ch]' \
            'examples/*.[ch]')
else
  files=$(find runtime models profiler tools examples -name '*.[ch]' 2>/dev/null | sort)
fi
if [ -z "$files" ]; then
  echo "check_includes: no sources found below $root" >&2
  exit 1
fi
for f in $files; do
  comp=${f%%/*}
  layer=${layer_of[$comp]}
  dir=$(dirname "$f")
  library=false
  [ "$layer" -le 2 ] && library=true
  while IFS=: read -r line text; do
    inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"][^>"]+[>"]).*/\1/' <<<"$text")
    name=${inc:1:${#inc}-2}
    case "$inc" in
    \<hetcl/*)
      h=${name#hetcl/}
      if [ -z "${owner[$h]+x}" ]; then
        report "$f" "$line" "$inc" "no public header of that name"
      elif [ "${owner[$h]}" -gt "$layer" ]; then
        report "$f" "$line" "$inc" \
          "${layer_name[$layer]} may not use ${layer_name[${owner[$h]}]} (a layer above it)"
      fi
      ;;
    \<hetcl_internal/*)
      $library || report "$f" "$line" "$inc" "the internal seam is for runtime, models and profiler"
      ;;
    \<CL/* | \<clblast* | \<hwloc*)
      $library || report "$f" "$line" "$inc" "tools and examples use public headers only"
      ;;
    \"*)
      if [[ "$name" == *../* ]]; then
        report "$f" "$line" "$inc" "reaches outside its folder; include through a header meant for it"
        continue
      fi
      # generated at build time: the embedded kernel sources' index and the build commit
      if [ "$name" = hetcl_clsource.h ] || [ "$name" = git_commit.h ]; then
        [ "$comp" = runtime ] || report "$f" "$line" "$inc" "generated for the runtime only"
        continue
      fi
      # generated at build time from Debian's onnx.proto (cmake/HetclOnnx.cmake): the ONNX
      # reader's, and white-box users of it (its fuzz target and tests)
      if [ "$name" = onnx.pb-c.h ]; then
        [[ "$f" == models/src/onnx/* || "$f" == models/fuzz/* || "$f" == tests/onnx/* ]] ||
          report "$f" "$line" "$inc" "generated for the ONNX reader (models/src/onnx) only"
        continue
      fi
      # resolve like the build: the file's folder, then its component's src/ (or tools/)
      base=$comp/src
      [ "$layer" -eq 3 ] && base=$comp
      target=""
      for cand in "$dir/$name" "$base/$name"; do
        [ -f "$cand" ] && target=$cand && break
      done
      if [ -z "$target" ]; then
        report "$f" "$line" "$inc" "not found in $dir or $base"
      elif [[ "$target" == *_impl.h && "$dir/" != "$(dirname "$target")/"* &&
              "$dir" != */fuzz ]]; then
        report "$f" "$line" "$inc" "*_impl.h is private to $(dirname "$target")/"
      fi
      if [[ "$f" == runtime/src/device/* && "$name" == rt/* ]]; then
        report "$f" "$line" "$inc" "device code never includes the task graph"
      fi
      ;;
    esac
    if [[ "$f" == runtime/src/device/* && "$inc" == "<hetcl/runtime.h>" ]]; then
      report "$f" "$line" "$inc" "device code never includes the task graph"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" || true)
done

if [ "$violations" -gt 0 ]; then
  echo "check_includes: $violations include(s) against the dependency rules (ARCHITECTURE.md)" >&2
  exit 1
fi
echo "check_includes: $(wc -w <<<"$files") files follow the dependency rules"
