# venv.sh: sourced by the scripts that give a test its Python environment
# (tests/interop/tf_env.sh, tests/corpus/corpus_env.sh).
#
# dtf_venv BUILD_DIR NAME IMPORTS REQUIREMENT...
#   Creates (once) the virtual environment BUILD_DIR/venv-NAME holding the
#   pip REQUIREMENTs, checked by importing the Python modules IMPORTS
#   ("tensorflow, pandas"). Later calls find the stamp file and re-use it;
#   when the requirements change, a complete venv is updated in place (so a
#   test using it meanwhile keeps working) and an incomplete one is created
#   again. Callers that start at once take turns (flock). Prints the venv's
#   python path on stdout; everything else goes to stderr.
dtf_venv() {
  local build_dir="$1" name="$2" imports="$3"
  shift 3
  local requirements=("$@")
  mkdir -p "$build_dir"
  build_dir="$(cd "$build_dir" && pwd)"
  local venv="$build_dir/venv-$name"
  local stamp="$venv/.dtf-stamp"
  local want_stamp="${requirements[*]}"
  local python="$venv/bin/python"
  local tag="${name}_env"

  exec 9>"$build_dir/.venv-$name.lock"
  if command -v flock >/dev/null; then
    flock 9
  fi
  if [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
    echo "$tag: re-using $venv" >&2
    echo "$python"
    return
  fi
  if [[ -x "$python" && -f "$stamp" ]]; then
    echo "$tag: updating $venv to ${requirements[*]}" >&2
    rm -f "$stamp"
  else
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
      if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "$tag: python3 venv module missing; installing python3-venv" >&2
        apt-get update >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv >&2
      else
        echo "$tag: python3 cannot create virtual environments" \
             "(install python3-venv)" >&2
        return 1
      fi
    fi
    echo "$tag: creating $venv with ${requirements[*]}" \
         "(takes a few minutes the first time)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$python" -m pip install --upgrade pip >&2
  fi
  "$python" -m pip install "${requirements[@]}" >&2
  "$python" -c "import $imports" >&2
  echo "$want_stamp" > "$stamp"
  echo "$python"
}
