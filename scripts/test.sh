#!/usr/bin/env bash
# Installs what is missing, builds dtf, runs the fuzz targets for a short
# while (10 s each: twelve targets, about two minutes) and then the whole
# test suite (unit, CLI, TensorFlow interop). Ends with the count and names
# of the tests that skipped (GTEST_SKIP: on a machine set up by
# scripts/deps.sh --test, only the CUDA tests without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
bash scripts/fuzz.sh "${DTF_FUZZ_SECONDS:-10}"
build="$(cd "${DTF_BUILD_DIR:-build}" && pwd)"
junit="$build/ctest-junit.xml"
rm -f "$junit"
status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" \
  --timeout 1800 --output-junit "$junit" || status=$?
# ctest marks a test that printed "[  SKIPPED ]" as skipped (the property
# gtest_discover_tests sets); its JUnit report lists them.
python3 - "$junit" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
except (OSError, ET.ParseError) as e:
    print(f"skipped: unknown (no ctest report: {e})")
    sys.exit(0)
skipped = sorted(c.get("name", "") for c in cases
                 if c.find("skipped") is not None)
names = f": {', '.join(skipped)}" if skipped else ""
print(f"skipped: {len(skipped)} test{'' if len(skipped) == 1 else 's'}{names}")
PY
exit "$status"
