#!/usr/bin/env bash
# sharded_checkpoint.sh DTF_BINARY SHARDED_VALUES SHARED_DIR SOURCE_DIR BUILD_DIR
#
# The sharded checkpoint interop test as CTest runs it: makes sure the
# TensorFlow venv exists (tf_env.sh), then runs sharded_checkpoint_test.py
# with it in a fresh BUILD_DIR/sharded-checkpoint-work.
set -euo pipefail

if [[ $# -ne 5 ]]; then
  echo "usage: $0 DTF_BINARY SHARDED_VALUES SHARED_DIR SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dtf="$(realpath "$1")"
values="$(realpath "$2")"
shared="$(realpath "$3")"
source_dir="$(realpath "$4")"
build_dir="$(realpath -m "$5")"
work="$build_dir/sharded-checkpoint-work"

python="$(bash "$here/tf_env.sh" "$build_dir")"

rm -rf "$work"
mkdir -p "$work"

exec "$python" "$here/sharded_checkpoint_test.py" --dtf "$dtf" \
  --values "$values" --shared "$shared" --source "$source_dir" --work "$work"
