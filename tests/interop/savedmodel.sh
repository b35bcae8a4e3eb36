#!/usr/bin/env bash
# savedmodel.sh DTF_BINARY SHARED_DIR SOURCE_DIR BUILD_DIR
#
# The SavedModel export test as CTest runs it: makes sure the TensorFlow
# venv exists (tf_env.sh), then runs savedmodel_test.py with it in a fresh
# BUILD_DIR/savedmodel-work.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 DTF_BINARY SHARED_DIR SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dtf="$(realpath "$1")"
shared="$(realpath "$2")"
source_dir="$(realpath "$3")"
build_dir="$(realpath -m "$4")"
work="$build_dir/savedmodel-work"

python="$(bash "$here/tf_env.sh" "$build_dir")"

rm -rf "$work"
mkdir -p "$work"

exec "$python" "$here/savedmodel_test.py" \
  --dtf "$dtf" --shared "$shared" --source "$source_dir" --work "$work"
