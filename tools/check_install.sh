#!/usr/bin/env bash
# The install check (a stage of tools/test.sh; runs alone too):
#   tools/check_install.sh            # a Release build (build-release, the README's build)
#   tools/check_install.sh BUILD_DIR  # an already configured build tree (tools/test.sh: build,
#                                     # the -Werror build it has just built and tested: the
#                                     # install rules are the same, a third build of the
#                                     # library would cost CI a minute)
#   1. a build of what is installed: the CLI, libhetcl.so and libhetcl.a; `cmake --install`
#      into a temporary prefix;
#   2. the installed bin/hetcl --version names this checkout's commit;
#   3. every installed header compiles on its own with pkg-config's flags;
#   4. both examples, from the installed share/doc/hetcl/examples, built four ways and run:
#      find_package(hetcl) (CMAKE_PREFIX_PATH) with hetcl::hetcl and hetcl::hetcl_static, and
#      pkg-config (PKG_CONFIG_PATH) shared and static; the static ones must not need
#      libhetcl.so. They use an OpenCL device where there is one, two host workers otherwise;
#   5. a `git archive HEAD` tarball names HEAD's commit (configure, then build only the target
#      that writes the commit header).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hetcl-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

build_dir=${1:-}
if [ -z "$build_dir" ]; then
  build_dir=build-release
  cmake --preset release >/dev/null
elif [ ! -f "$build_dir/CMakeCache.txt" ]; then
  echo "check_install: $build_dir: expected a configured build tree (its CMakeCache.txt)" >&2
  exit 2
fi
echo "-- $build_dir: build and install into $prefix"
cmake --build "$build_dir" -j "$jobs" --target hetcl_cli hetcl_shared hetcl_static
cmake --install "$build_dir" --prefix "$prefix" >/dev/null

commit=""
if git rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git -c safe.directory='*' rev-parse HEAD | cut -c1-12)
fi
version=$("$prefix/bin/hetcl" --version)
echo "-- installed bin/hetcl --version: $version"
if [ -n "$commit" ] && ! [[ "$version" =~ \(commit\ $commit(-dirty)?\)$ ]]; then
  echo "check_install: expected the commit $commit in: $version" >&2
  exit 1
fi

pc=$(dirname "$(find "$prefix" -name hetcl.pc)")
export PKG_CONFIG_PATH=$pc
libdir=$(pkg-config --variable=libdir hetcl)
echo "-- every installed header alone, with pkg-config --cflags hetcl"
for h in "$prefix"/include/hetcl/*.h; do
  printf '#include <hetcl/%s>\nint main(void) { return 0; }\n' "$(basename "$h")" |
    cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -x c - $(pkg-config --cflags hetcl)
done

examples=$prefix/share/doc/hetcl/examples
bin=$tmp/bin
mkdir -p "$bin"
echo "-- the examples with find_package(hetcl), shared and static"
for kind in shared static; do
  static=OFF
  [ "$kind" = static ] && static=ON
  cmake -S "$examples" -B "$tmp/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DHETCL_EXAMPLE_STATIC=$static >/dev/null
  cmake --build "$tmp/cmake-$kind" -j "$jobs" >/dev/null
  for ex in task_graph infer_mlp; do
    cp "$tmp/cmake-$kind/$ex/$ex" "$bin/$ex-cmake-$kind"
  done
done
echo "-- the examples with pkg-config, shared and static"
for ex in task_graph infer_mlp; do
  # Shared: -rpath because the prefix is not one the dynamic loader searches.
  cc -std=c11 -O2 -o "$bin/$ex-pc-shared" "$examples/$ex/$ex.c" \
    $(pkg-config --cflags --libs hetcl) -lm -Wl,-rpath,"$libdir"
  # Static: libhetcl.a by its file name first; the -lhetcl of pkg-config's line then finds
  # nothing left to resolve, and --as-needed drops it.
  cc -std=c11 -O2 -o "$bin/$ex-pc-static" "$examples/$ex/$ex.c" $(pkg-config --cflags hetcl) \
    -Wl,--as-needed -l:libhetcl.a $(pkg-config --static --libs hetcl)
done
for b in "$bin"/*-static; do
  if readelf -d "$b" | grep -q 'NEEDED.*libhetcl'; then
    echo "check_install: $b needs libhetcl.so" >&2
    exit 1
  fi
done

echo "-- running them"
export HETCL_CACHE_DIR=$tmp/cache # the OpenCL program cache, shared by the eight runs
for b in "$bin"/*; do
  case $b in
  *task_graph*) args=() ;;
  *) args=("$prefix/share/hetcl/models/mlp.json") ;;
  esac
  if ! out=$("$b" "${args[@]}" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "check_install: $(basename "$b") failed" >&2
    exit 1
  fi
  echo "$(basename "$b"): $(printf '%s\n' "$out" | tail -1)"
done

if [ -n "$commit" ]; then
  echo "-- a git archive tarball of HEAD names its commit"
  mkdir "$tmp/tarball"
  git -c safe.directory='*' archive --format=tar HEAD | tar -x -C "$tmp/tarball"
  cmake -S "$tmp/tarball" -B "$tmp/tarball-build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$tmp/tarball-build" --target hetcl_git_commit >/dev/null
  header=$(find "$tmp/tarball-build" -name git_commit.h)
  if ! grep -q "HETCL_GIT_COMMIT \"$commit\"" "$header"; then
    echo "check_install: the tarball's build does not name $commit:" >&2
    cat "$header" >&2
    exit 1
  fi
  grep HETCL_GIT_COMMIT "$header"
fi
echo "-- install check passed"
