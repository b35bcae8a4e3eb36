#!/usr/bin/env bash
# corpus_env.sh BUILD_DIR
#
# Creates (once) a Python virtual environment at BUILD_DIR/venv-corpus
# holding scikit-learn and pandas, the baselines of the data corpus test
# (tests/corpus) and of its benchmark (bench/corpus). Later runs find the
# stamp file and re-use the venv; when the requirements change, a complete
# venv is updated in place and an incomplete one is created again.
# Prints the venv's python path on stdout; everything else goes to stderr.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi

REQUIREMENTS=("scikit-learn==1.9.1" "pandas==3.1.1")

source "$(dirname "${BASH_SOURCE[0]}")/../testing/venv.sh"
dtf_venv "$1" corpus "sklearn, pandas" "${REQUIREMENTS[@]}"
