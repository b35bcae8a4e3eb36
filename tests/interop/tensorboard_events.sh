#!/usr/bin/env bash
# tensorboard_events.sh WRITE_EVENTS BUILD_DIR
#
# The TensorBoard event file test as CTest runs it: makes sure the TensorFlow
# venv (with TensorBoard) exists (tf_env.sh), then runs
# tensorboard_events_test.py with it in a fresh BUILD_DIR/tensorboard-work.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 WRITE_EVENTS BUILD_DIR" >&2
  exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
write_events="$(realpath "$1")"
build_dir="$(realpath -m "$2")"
work="$build_dir/tensorboard-work"

python="$(bash "$here/tf_env.sh" "$build_dir")"

rm -rf "$work"
mkdir -p "$work"

exec "$python" "$here/tensorboard_events_test.py" \
  --write-events "$write_events" --work "$work"
