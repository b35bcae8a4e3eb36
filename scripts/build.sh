#!/usr/bin/env bash
# Configures and builds dtf into build/ (or $DTF_BUILD_DIR).
# Usage: scripts/build.sh [TARGET...]   (default: every target)
# The first run configures: build type $DTF_BUILD_TYPE (default Release:
# -O2 without debug info; RelWithDebInfo for a debugger), plus any CMake
# options in $DTF_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${DTF_BUILD_DIR:-build}"
if [[ ! -f "$build/build.ninja" ]]; then
  # shellcheck disable=SC2086  # DTF_CMAKE_ARGS is a list of options
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE="${DTF_BUILD_TYPE:-Release}" ${DTF_CMAKE_ARGS:-}
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
