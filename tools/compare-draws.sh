#!/usr/bin/env bash
# Compares the draws of two flymc binaries on seeded configurations covering every model and
# θ-kernel: a refactoring must leave them bit-identical (a change of draws on purpose says so in
# its commit). Only the header and the draw rows are compared: the comment lines hold timings.
#   tools/compare-draws.sh OLD_FLYMC NEW_FLYMC [WORKDIR]
# Exit 0 when every chain of every configuration is identical, 1 otherwise.
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2")
work=${3:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
"$new" data synth-logistic --n 3000 --d 6 --seed 3 --out logistic.csv >/dev/null
"$new" data synth-robust --n 3000 --d 5 --seed 3 --out robust.csv >/dev/null
# A deterministic 3-class set: labels from the features by a fixed rule, with ties broken by a
# hash-like term so that no class is separable.
awk 'BEGIN { srand(7); print "label,x1,x2,x3";
  for (i = 0; i < 2000; i++) {
    x1 = rand() * 4 - 2; x2 = rand() * 4 - 2; x3 = rand() * 4 - 2;
    s0 = x1 + 0.5 * rand(); s1 = x2 + 0.5 * rand(); s2 = -x1 - x2 + 0.5 * rand();
    y = (s0 > s1 && s0 > s2) ? 0 : (s1 > s2 ? 1 : 2);
    printf "%d,%.6f,%.6f,%.6f\n", y, x1, x2, x3 } }' >softmax.csv

configs=(
  "logistic-rwmh|--data logistic.csv --kernel rwmh"
  "logistic-mala|--data logistic.csv --kernel mala"
  "logistic-hmc|--data logistic.csv --kernel hmc"
  "logistic-full-hmc|--data logistic.csv --kernel hmc --algo full"
  "logistic-slice-explicit|--data logistic.csv --kernel slice --z explicit"
  "softmax-mala|--data softmax.csv --model softmax --kernel mala"
  "robust-slice|--data robust.csv --model robust --prior laplace --kernel slice"
  "logistic-untuned-perdatum|--data logistic.csv --kernel mala --bound untuned --q-per-datum"
)
differ=0
for entry in "${configs[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  for which in old new; do
    bin=$old
    [[ $which == new ]] && bin=$new
    rm -rf "run-$which"
    # shellcheck disable=SC2086
    "$bin" sample $args --chains 2 --warmup 300 --iters 500 --seed 7 --quiet --out "run-$which" \
      >/dev/null 2>"stderr-$which.txt" || { echo "$name: $which binary failed"; cat "stderr-$which.txt"; exit 2; }
  done
  for c in 1 2; do
    if cmp -s <(grep -v '^#' "run-old/chain-$c.csv") <(grep -v '^#' "run-new/chain-$c.csv"); then
      echo "$name chain $c: same"
    else
      echo "$name chain $c: DIFFERENT"
      diff <(grep -v '^#' "run-old/chain-$c.csv") <(grep -v '^#' "run-new/chain-$c.csv") | head -3
      differ=1
    fi
  done
done
exit $differ
