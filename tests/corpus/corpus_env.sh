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

build_dir="$1"
mkdir -p "$build_dir"
build_dir="$(cd "$build_dir" && pwd)"
venv="$build_dir/venv-corpus"
stamp="$venv/.dtf-stamp"
want_stamp="${REQUIREMENTS[*]}"
python="$venv/bin/python"

log() { echo "corpus_env: $*" >&2; }

venv_is_ready() {
  [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]
}

ensure_venv_module() {
  if python3 -c 'import venv, ensurepip' 2>/dev/null; then
    return
  fi
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
    log "python3 venv module missing; installing python3-venv"
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv >&2
  else
    log "python3 cannot create virtual environments (install python3-venv)"
    exit 1
  fi
}

create_venv() {
  if [[ -x "$python" && -f "$stamp" ]]; then
    log "updating $venv to ${REQUIREMENTS[*]}"
    rm -f "$stamp"
  else
    ensure_venv_module
    log "creating $venv with ${REQUIREMENTS[*]}"
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$python" -m pip install --upgrade pip >&2
  fi
  "$python" -m pip install "${REQUIREMENTS[@]}" >&2
  "$python" -c 'import sklearn, pandas' >&2
  echo "$want_stamp" > "$stamp"
}

# The test and the benchmark may start at once; the lock makes the second
# wait for the first instead of installing twice.
exec 9>"$build_dir/.venv-corpus.lock"
if command -v flock >/dev/null; then
  flock 9
fi

if venv_is_ready; then
  log "re-using $venv"
else
  create_venv
fi

echo "$python"
