#!/usr/bin/env bash
# Installs every build, test and data dependency of flymc from Debian's archive.
# Idempotent: packages already present are left alone, and apt is not touched at all
# when nothing is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake git pkg-config
  libtbb-dev libeigen3-dev libopenblas-dev
  libbenchmark-dev doctest-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libhdf5-dev dataset-fashion-mnist
)
# Extras for the sanitizer / fuzzing / format jobs (CI sets it): FLYMC_DEPS_EXTRA=1. clang and
# its runtimes build the libFuzzer targets; llvm brings llvm-symbolizer for readable sanitizer
# stack traces.
if [[ "${FLYMC_DEPS_EXTRA:-0}" == "1" ]]; then
  packages+=(clang clang-format libclang-rt-14-dev llvm)
fi
# Open MPI, for builds with -DFLYMC_MPI=ON (CI sets it): FLYMC_DEPS_MPI=1.
if [[ "${FLYMC_DEPS_MPI:-0}" == "1" ]]; then
  packages+=(libopenmpi-dev openmpi-bin)
fi
# The Python module, for builds with -DFLYMC_PYTHON=ON (tools/test.sh sets it):
# FLYMC_DEPS_PYTHON=1. Debian's pybind11 and NumPy install into Debian's /usr/bin/python3, which
# the build and the module's tests use (docs/python.md).
if [[ "${FLYMC_DEPS_PYTHON:-0}" == "1" ]]; then
  packages+=(python3-dev python3-numpy python3-pybind11 pybind11-dev)
fi

# Headless Chromium, for the browser test of `flymc report` (tests/report_browser.py renders a
# report to PNG): FLYMC_DEPS_BROWSER=1. tools/test.sh sets it; the main job does not need it.
if [[ "${FLYMC_DEPS_BROWSER:-0}" == "1" ]]; then
  packages+=(chromium)
fi

# Stan (Debian's rstan), for the reference posterior of tools/stan-gold.R: FLYMC_DEPS_STAN=1.
# Neither CI nor the main job needs it (docs/validation.md, "Against Stan").
if [[ "${FLYMC_DEPS_STAN:-0}" == "1" ]]; then
  packages+=(r-cran-rstan)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
