#!/usr/bin/env bash
# Plants each mutant of tools/mutants/*.patch (or the patches named) in a scratch worktree of HEAD,
# builds the tests there and runs the test selection its "# ctest:" line names; a mutant must make
# that selection fail. Prints caught / MISSED per mutant and exits 1 if any mutant survives, so a
# test suite that has lost its power shows here. The repository's own tree is never modified.
#   tools/mutants.sh                          # every mutant
#   tools/mutants.sh tools/mutants/z-implicit-inequality-reversed.patch
# Environment: MUTANTS_DIR (scratch, default /tmp/flymc-mutants), CMAKE_CXX_COMPILER_LAUNCHER.
# Each mutant rebuilds only what its patch touches, then runs its tests (a few minutes each).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
scratch=${MUTANTS_DIR:-/tmp/flymc-mutants}
src=$scratch/src
patches=("$@")
if ((${#patches[@]} == 0)); then patches=(tools/mutants/*.patch); fi

if [[ -d $src ]]; then git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"; fi
git worktree prune
mkdir -p "$scratch"
git worktree add --detach "$src" HEAD >/dev/null
trap 'git -C "$repo" worktree remove --force "$src" >/dev/null 2>&1 || true' EXIT
cmake -S "$src" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -DFLYMC_BUILD_BENCH=OFF \
  ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} \
  >/dev/null

survivors=0
for patch in "${patches[@]}"; do
  name=$(basename "$patch" .patch)
  selection=$(sed -n 's/^# ctest: //p' "$patch")
  [[ -n $selection ]] || { echo "$name: no '# ctest:' line"; exit 2; }
  git -C "$src" checkout -q -- .
  git -C "$src" apply "$repo/$patch"
  echo "== $name: ctest $selection"
  cmake --build "$scratch/build" -j "$(nproc)" --target flymc_tests flymc_cli >/dev/null
  log=$scratch/$name.log
  if eval ctest --test-dir "$scratch/build" -j "$(nproc)" "$selection" >"$log" 2>&1; then
    echo "$name: MISSED (the selection passed; see $log)"
    survivors=$((survivors + 1))
  else
    echo "$name: caught ($(grep -c '\*\*\*Failed' "$log" || true) failing tests; $log)"
  fi
done
git -C "$src" checkout -q -- .
echo "$((${#patches[@]} - survivors)) of ${#patches[@]} mutants caught"
((survivors == 0))
