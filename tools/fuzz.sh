#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, FLYMC_FUZZ=ON) and runs each for a while.
#   tools/fuzz.sh                 # fuzz_csv, fuzz_npy, fuzz_libsvm and fuzz_hdf5, 60 s each
#   tools/fuzz.sh 600 npy         # only fuzz_npy, 10 minutes
# Seeds: tests/fuzz/corpus/<format> (read only); inputs found are kept in
# $FUZZ_BUILD_DIR/corpus-<format> across runs, crashes in $FUZZ_BUILD_DIR/crashes-<format>/.
# A crash makes the script fail: fix it, then add the reproducer to tests/fuzz/corpus/<format>
# and a unit test. Environment: FUZZ_BUILD_DIR (default build-fuzz), FLYMC_WERROR (OFF),
# FUZZ_CONFIGURE (1; 0 runs the targets of a build directory configured elsewhere with
# FLYMC_FUZZ=ON, as CI's sanitizer build is).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
formats=("$@")
if ((${#formats[@]} == 0)); then formats=(csv npy libsvm hdf5); fi
build=${FUZZ_BUILD_DIR:-build-fuzz}

if ! command -v clang++ >/dev/null; then
  FLYMC_DEPS_EXTRA=1 ./tools/install-deps.sh
fi
if [[ ${FUZZ_CONFIGURE:-1} != 0 ]]; then
  cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only" \
    -DFLYMC_FUZZ=ON -DFLYMC_BUILD_TESTS=OFF -DFLYMC_BUILD_BENCH=OFF -DFLYMC_BUILD_TOOLS=OFF \
    -DFLYMC_WERROR="${FLYMC_WERROR:-OFF}" >/dev/null
fi
targets=()
for f in "${formats[@]}"; do targets+=("fuzz_$f"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One fuzzer per core at a time (libFuzzer runs on one thread).
fuzz_one() {  # FORMAT: runs it, prints its summary, returns non-zero on a finding
  local f=$1 corpus="$build/corpus-$1" crashes="$build/crashes-$1"
  mkdir -p "$corpus" "$crashes"
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: a memory blow-up is a finding.
  if ! "$build/tests/fuzz/fuzz_$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -dict="tests/fuzz/$f.dict" -artifact_prefix="$crashes/" -print_final_stats=1 \
    "$corpus" "tests/fuzz/corpus/$f" 2>"$build/fuzz-$f.log"; then
    tail -n 60 "$build/fuzz-$f.log"
    echo "fuzz_$f FAILED: reproducer(s) in $crashes/" >&2
    return 1
  fi
  echo "== fuzz_$f: ${seconds} s"
  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$build/fuzz-$f.log" || true
}
status=0
parallel=$(nproc)
pids=()
for f in "${formats[@]}"; do
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$f" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
