#!/usr/bin/env bash
# Configures and builds dtf into build/ (or $DTF_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${DTF_BUILD_DIR:-build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE="${DTF_BUILD_TYPE:-Release}" "$@"
fi
cmake --build "$build" -j "$(nproc)"
