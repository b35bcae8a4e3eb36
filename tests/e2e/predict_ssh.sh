#!/usr/bin/env bash
# tests/e2e/predict_ssh.sh DTF SHARED_DIR BUILD_DIR WORK_DIR
#
# dtf predict --profile over SSH against real OpenSSH servers started here
# (tests/launch/ssh/sshd.sh): two "hosts", 127.0.0.62 and 127.0.0.63, each
# an sshd of its own. The Titanic example trained for a few steps scores its
# records:
#   1. with_data = true (model and inputs shipped), 2 workers, CSV output,
#      whole files and records split: byte for byte the one-process output
#   2. with_data = false (the inputs found at the same paths on the hosts),
#      2 workers, JSON lines
#   3. a shard that fails on its host: the error names the task, the host
#      and the file, exit non-zero, the output left as it was
#   4. a host that refuses: the error names it, exit non-zero, the output
#      left as it was
#   each time: no shard left here or on the hosts, no task left running
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/e2e_lib.sh"
e2e_start "DTF SHARED_DIR BUILD_DIR WORK_DIR" "$@"
py=/usr/bin/python3
sshd_sh="$source_dir/tests/launch/ssh/sshd.sh"
ssh_dir="$work/ssh"
remote="$work/remote"
pids_to_kill=()

cleanup() {
  local rc=$?
  local name
  for name in h1 h2; do bash "$sshd_sh" stop "$ssh_dir" "$name" || true; done
  for pid in "${pids_to_kill[@]}"; do kill "$pid" 2>/dev/null || true; done
  pkill -f -- "$remote/" 2>/dev/null || true
  # A test that passed leaves no copy of dtf on its hosts (12 MB each).
  if [[ $rc -eq 0 ]]; then rm -rf "$remote"; fi
}
trap cleanup EXIT

if [[ ! -x /usr/sbin/sshd ]]; then
  echo "SKIPPED: /usr/sbin/sshd is not installed (apt-get install openssh-server)"
  exit 0
fi

# nothing_left: within 15 s no process runs anything under the hosts' work
# directories, and no shard output or index is left on them or here.
nothing_left() {
  local deadline=$((SECONDS + 15)) left
  while :; do
    left="$(pgrep -a -f -- "$remote/" || true)"
    [[ -z "$left" ]] && break
    ((SECONDS >= deadline)) && fail "processes left on the hosts: $left"
    sleep 0.2
  done
  left="$(find "$remote" "$work/titanic" -name '*.shard-*' 2>/dev/null || true)"
  [[ -z "$left" ]] || fail "shard files left: $left"
  echo "ok: no task and no shard left"
}

# --- hosts ------------------------------------------------------------------
bash "$sshd_sh" keys "$ssh_dir"
a1=127.0.0.62 a2=127.0.0.63
port1="$(bash "$sshd_sh" start "$ssh_dir" h1 "$a1" 0)"
port2="$(bash "$sshd_sh" start "$ssh_dir" h2 "$a2" 0)"
bash "$sshd_sh" known-host "$ssh_dir" h1 "$a1" "$port1"
bash "$sshd_sh" known-host "$ssh_dir" h2 "$a2" "$port2"
echo "ok: sshd on $a1:$port1 and $a2:$port2"

# --- the model ----------------------------------------------------------------
mkdir -p "$work/titanic/profiles"
cd "$work/titanic"
sed "s#csv = \[\"[^\"]*\"\]#csv = [\"$shared/data/titanic/train.csv\"]#" \
  "$source_dir/examples/titanic/dtf.toml" > dtf.toml
"$dtf" gen-records --job dtf.toml > /dev/null
"$dtf" train --job dtf.toml --steps 5 --no-eval --quiet > /dev/null
[[ -d out/model ]] || fail "no model at out/model"
user="$(id -un)"

# profile NAME WITH_DATA HOSTFILE_TEXT: profiles/NAME.toml and its hostfile.
profile() {
  printf '%s\n' "$3" > "profiles/$1.hosts"
  cat > "profiles/$1.toml" <<TOML
backend = "ssh"
hostfile = "$1.hosts"
workers = 2
with_data = $2
work_dir = "$remote/{host}"
[ssh]
user = "$user"
identity_file = "$ssh_dir/id_ed25519"
known_hosts = "$ssh_dir/known_hosts"
config = "none"
connect_timeout = 3
TOML
}
hosts="$a1 slots=1 port=$port1
$a2 slots=1 port=$port2"
profile shipped true "$hosts"
profile shared false "$hosts"

# same NAME PROFILE INPUT FORMAT [ARGS...]: one process and the profile's 2
# workers give the same bytes.
same() {
  local name="$1" prof="$2" input="$3" format="$4" rc=0
  shift 4
  "$dtf" predict --model out/model --input "$input" --format "$format" "$@" \
    --output "$name.one.$format" 2> "$name.one.err" \
    || { cat "$name.one.err" >&2; fail "$name: one-process predict failed"; }
  "$dtf" predict --model out/model --input "$input" --format "$format" "$@" \
    --profile "$prof" --workers 2 --output "$name.$format" \
    > "$name.out" 2> "$name.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    cat "$name.err" >&2
    fail "$name: predict --profile $prof exited $rc"
  fi
  [[ $(wc -c < "$name.one.$format") -gt 1000 ]] || fail "$name: one-process output too small"
  cmp "$name.one.$format" "$name.$format" || fail "$name: outputs differ"
  grep -q "records scored (shard 0: " "$name.err" || { cat "$name.err" >&2; fail "$name: no progress"; }
  grep -q "worker:0 started on $a1" "$name.err" || { cat "$name.err" >&2; fail "$name: worker:0 not on $a1"; }
  grep -q "worker:1 started on $a2" "$name.err" || { cat "$name.err" >&2; fail "$name: worker:1 not on $a2"; }
  grep -q "merged 2 shards into $name.$format" "$name.err" || { cat "$name.err" >&2; fail "$name: no merge"; }
  echo "ok: $name: $(wc -l < "$name.$format") lines, the same as one process"
  nothing_left
}

# --- 1. shipped ---------------------------------------------------------------
# 2 files over 2 workers (whole files), then 1 file split by records.
same files_csv shipped 'records/train/*' csv --keep Ticket,Sex
grep -q "$a1: shipped the runtime and the job" files_csv.err || { cat files_csv.err >&2; fail "files_csv: nothing shipped"; }
[[ -n "$(find "$remote/$a1/jobs" -path '*/model/*' -print -quit)" ]] || fail "no model shipped to $a1"
[[ -n "$(find "$remote/$a2/jobs" -path '*/inputs/000001-*' -print -quit)" ]] || fail "no input shipped to $a2"
same records_csv shipped 'records/train/part-00000-of-00002*' csv --keep Ticket

# --- 2. the inputs on the hosts already ---------------------------------------
same shared_jsonl shared 'records/eval/*' jsonl --keep Ticket
# Its archive: the model alone.
bare=0
for d in "$remote/$a1"/jobs/*/; do
  [[ -d "$d/model" && ! -e "$d/inputs" ]] && bare=$((bare + 1))
done
[[ $bare -eq 1 ]] || fail "shared_jsonl: $bare job dirs on $a1 hold a model without inputs, not 1"

# --- 3. a shard that fails on its host ------------------------------------------
# Sorted last, the file that is no TFRecord is worker 0's (files 0 and 2 of
# 3): the run fails naming the task and its host, the output is left as it
# was, and no shard is left on either host.
mkdir -p zzz
{ head -c 64 /dev/zero | tr '\0' x; echo "not a record"; } > zzz/zzz.tfrecord
echo old > kept.csv
rc=0
"$dtf" predict --model out/model --input 'records/train/*' --input zzz/zzz.tfrecord \
  --format csv --profile shipped --workers 2 --output kept.csv > bad.out 2> bad.err || rc=$?
[[ $rc -ne 0 ]] || fail "bad: predict succeeded on a file that is no TFRecord"
grep -q "error: task worker:0 on $a1 failed" bad.err \
  || { cat bad.err >&2; fail "bad: the error does not name worker:0 on $a1"; }
grep -q "inputs/000002-zzz.tfrecord: corrupt record" bad.err \
  || { cat bad.err >&2; fail "bad: the error does not name the file"; }
[[ "$(cat kept.csv)" == old ]] || fail "bad: kept.csv changed"
echo "ok: bad fails (exit $rc): $(grep -m1 "error: task worker:0" bad.err)"
nothing_left

# --- 4. a host that refuses ---------------------------------------------------
hold_port "$a2" bind
profile refused true "$a1 slots=1 port=$port1
$a2 slots=1 port=$held_port"
echo old > kept.csv
rc=0
"$dtf" predict --model out/model --input 'records/train/*' --format csv \
  --profile refused --workers 2 --output kept.csv > refused.out 2> refused.err || rc=$?
[[ $rc -ne 0 ]] || fail "refused: predict succeeded with $a2 refusing"
grep -Eq -- "$a2: .*(refused|unreachable|sshd listens)" refused.err \
  || { cat refused.err >&2; fail "refused: the error does not name $a2"; }
[[ "$(cat kept.csv)" == old ]] || fail "refused: kept.csv changed"
echo "ok: refused fails (exit $rc): $(grep -E -m1 -- "$a2" refused.err)"
nothing_left

echo "PASS: predict_ssh"
