# Sourced by the bench scripts that train the census job: where the dtf
# binary is, the job with absolute CSV paths, and its records. They use
# `build` and `repo` (find_dtf), `job_src`, `work` and `dtf`; the sourcing
# script defines log().

# The dtf binary of BUILD (--build) or of the repository's build/; none:
# prints nothing.
find_dtf() {
  local candidate
  for candidate in "$build/cmd/dtf" "$repo/build/cmd/dtf"; do
    if [[ -x "$candidate" ]]; then
      echo "$candidate"
      return
    fi
  done
}

# WORK/dtf.toml: the census job with its CSV paths made absolute, so that
# its records (WORK/records), output (WORK/out) and runs (WORK/.dtf/runs)
# land in WORK.
write_job() {
  python3 - "$job_src" "$work/dtf.toml" <<'PY'
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
base = os.path.dirname(os.path.abspath(src))
out = []
for line in open(src):
    if re.match(r"\s*csv\s*=", line):
        line = re.sub(r'"([^"]+)"', lambda m: '"%s"' % (
            m.group(1) if os.path.isabs(m.group(1))
            else os.path.normpath(os.path.join(base, m.group(1)))), line)
    out.append(line)
text = "".join(out)
if not os.path.exists(dst) or open(dst).read() != text:
    with open(dst, "w") as f:
        f.write(text)
PY
}

# WORK/records from `dtf gen-records --job`; kept while the job is the same.
make_records() {
  local stamp="$work/records/.stamp" want
  want="$(sha256sum "$work/dtf.toml" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "re-using $work/records"
    return
  fi
  if [[ -z "$dtf" ]]; then
    echo "no dtf binary to write $work/records; pass --dtf PATH" >&2
    exit 2
  fi
  log "dtf gen-records --job $work/dtf.toml"
  rm -rf "$work/records"
  "$dtf" gen-records --job "$work/dtf.toml" >&2
  echo "$want" > "$stamp"
}
