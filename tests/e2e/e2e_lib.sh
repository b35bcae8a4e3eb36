# Helpers the end-to-end scripts share; sourced, not run. They use `py`
# (a Python 3, /usr/bin/python3 unless set), and hold_port also `work` (a
# scratch directory) and `pids_to_kill` (an array the script's cleanup
# kills).

py="${py:-/usr/bin/python3}"

# e2e_start USAGE ARGS...: the script's arguments as USAGE names them
# ("DTF SHARED_DIR WORK_DIR", or with BUILD_DIR before WORK_DIR): exits 2
# with the usage unless there are as many; sets source_dir (the
# repository), dtf and shared (absolute), build_dir (with BUILD_DIR) and
# work (the last argument: emptied, then absolute).
e2e_start() {
  local usage="$1" want
  shift
  want="$(wc -w <<<"$usage")"
  if [[ $# -ne $want ]]; then
    echo "usage: $0 $usage" >&2
    exit 2
  fi
  source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  dtf="$(realpath "$1")"
  shared="$(realpath "$2")"
  if ((want == 4)); then build_dir="$(realpath -m "$3")"; fi
  work="${!#}"
  rm -rf "$work"
  mkdir -p "$work"
  work="$(realpath "$work")"
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# metric FILE KEY: a value from the --metrics-out JSON.
metric() {
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# at_least VALUE MIN NAME
at_least() {
  "$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2" \
    || fail "$3: $1 < $2"
  echo "ok: $3 = $1 (goal >= $2)"
}

# elapsed START: seconds since START (a `date +%s.%N`), e.g. "12.3".
elapsed() {
  "$py" -c 'import sys,time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$1"
}

# show_tail FILE...: the last lines of each file, for a failure's context.
show_tail() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] || continue
    echo "--- last lines of $f" >&2
    tail -n 30 "$f" >&2
  done
}

# hold_port ADDR bind|listen: sets held_port to a port on ADDR that a
# process of this test holds until the end: bound only (connections are
# refused), or listened on and never answered.
held_port=""
hold_port() {
  local file="$work/held.$RANDOM.$RANDOM" i
  "$py" -c '
import os, socket, sys, time
s = socket.socket()
s.bind((sys.argv[1], 0))
if sys.argv[2] == "listen":
    s.listen(8)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
time.sleep(3600)' "$1" "$2" "$file" < /dev/null > /dev/null 2>&1 &
  pids_to_kill+=($!)
  for ((i = 0; i < 600; i++)); do
    [[ -s "$file" ]] && { held_port="$(cat "$file")"; return 0; }
    sleep 0.1
  done
  fail "no port held on $1 after 60 s"
}

# alive_pids RUN_DIR: "task:pid" for each recorded process (the tasks and
# the launcher or supervisor) still alive; a recycled pid (another start
# time than recorded) does not count.
alive_pids() {
  local run_dir="$1" name pid ticks now
  while read -r name pid ticks; do
    kill -0 "$pid" 2>/dev/null || continue
    now="$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$pid/stat" 2>/dev/null || true)"
    if [[ -z "$now" || "$now" == "$ticks" ]]; then echo "$name:$pid"; fi
  done < <("$py" - "$run_dir/tasks.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
print("supervisor", record["supervisor"]["pid"], record["supervisor"]["start_ticks"])
for t in record["tasks"]:
    if t["pid"] > 0:
        print(t["task"], t["pid"], t["start_ticks"])
PY
  )
  return 0
}

# check_nothing_left RUN_DIR RUN_ID [WAIT_S]: within WAIT_S seconds (default
# 0), no recorded process is alive and no process names the run id.
check_nothing_left() {
  local run_dir="$1" id="$2" wait_s="${3:-0}" deadline left named
  deadline=$((SECONDS + wait_s))
  while :; do
    left="$(alive_pids "$run_dir")"
    named="$(pgrep -a -f -- "$id" || true)"
    [[ -z "$left" && -z "$named" ]] && break
    if ((SECONDS >= deadline)); then
      fail "run $id left processes behind: ${left//$'\n'/ } ${named:+; pgrep -f $id: $named}"
    fi
    sleep 0.2
  done
  echo "ok: no process of run $id is left"
}
