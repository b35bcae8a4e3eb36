#!/usr/bin/env bash
# run.sh DTF_BINARY BUILD_DIR [run_corpus.py options]
#
# The data corpus test as CTest runs it: makes sure the scikit-learn venv
# exists (corpus_env.sh), then runs run_corpus.py with it in a fresh
# BUILD_DIR/corpus-work, the table going to BUILD_DIR/corpus-work/table.json.
# Further arguments (--cases a,b, --train-args "...") go to run_corpus.py.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 DTF_BINARY BUILD_DIR [run_corpus.py options]" >&2
  exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dtf="$(realpath "$1")"
build_dir="$(realpath -m "$2")"
shift 2
work="$build_dir/corpus-work"

python="$(bash "$here/corpus_env.sh" "$build_dir")"

rm -rf "$work"
mkdir -p "$work"

exec "$python" "$here/run_corpus.py" --dtf "$dtf" --work "$work" \
  --json "$work/table.json" "$@"
