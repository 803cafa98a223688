#!/usr/bin/env bash
# Installs what is missing, builds flymc and runs the whole test suite under CTest.
#   tools/test.sh                 # all tests
#   tools/test.sh -L unit         # extra arguments go to ctest
# Environment: BUILD_DIR (default build), FLYMC_WERROR (ON in CI), CMAKE_BUILD_TYPE (Release),
# FLYMC_DEPS_BROWSER (default 1: Chromium for the browser test of `flymc report`, ctest -L browser).
set -euo pipefail
cd "$(dirname "$0")/.."
export FLYMC_DEPS_BROWSER=${FLYMC_DEPS_BROWSER:-1}
./tools/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
  -DFLYMC_WERROR="${FLYMC_WERROR:-OFF}" ${FLYMC_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
