#!/usr/bin/env bash
# Installs what is missing, builds dtf, runs the fuzz targets for a short
# while (10 s each: twelve targets, about two minutes) and then the whole
# test suite (unit, CLI, TensorFlow interop).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
bash scripts/fuzz.sh "${DTF_FUZZ_SECONDS:-10}"
ctest --test-dir "${DTF_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" \
  --timeout 1800
