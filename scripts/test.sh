#!/usr/bin/env bash
# Set up, build and run the whole test suite (what CI runs).
#   BUILD_DIR   build directory (default: build)
#   CTEST_ARGS  extra ctest arguments, e.g. "-R Config"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
# shellcheck disable=SC2086
ctest --output-on-failure --timeout 600 -j "${CTEST_JOBS:-2}" ${CTEST_ARGS:-}
