#!/usr/bin/env bash
# Installs what is missing, builds flymc and runs the whole test suite under CTest.
#   tools/test.sh                 # all tests
#   tools/test.sh -L unit         # extra arguments go to ctest
# Environment: BUILD_DIR (default build), FLYMC_WERROR (ON in CI), CMAKE_BUILD_TYPE (Release),
# FLYMC_DEPS_BROWSER (default 1: Chromium for the browser test of `flymc report`, ctest -L browser),
# FLYMC_PYTHON (ON: the Python module and its tests, docs/python.md; OFF skips them),
# FLYMC_CMAKE_ARGS (more cmake options, given last so they win).
set -euo pipefail
cd "$(dirname "$0")/.."
export FLYMC_DEPS_BROWSER=${FLYMC_DEPS_BROWSER:-1}
FLYMC_PYTHON=${FLYMC_PYTHON:-ON}
if [[ $FLYMC_PYTHON == ON ]]; then export FLYMC_DEPS_PYTHON=1; fi
./tools/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
  -DFLYMC_WERROR="${FLYMC_WERROR:-OFF}" -DFLYMC_PYTHON="$FLYMC_PYTHON" ${FLYMC_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
