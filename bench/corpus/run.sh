#!/usr/bin/env bash
# bench/corpus/run.sh [--build DIR] [--work DIR] [--cases a,b]
#                     [--train-args "ARGS"] [--wait-idle SECONDS] [--no-build]
#
# What dtf init's defaults reach on CSV files as they come: builds dtf
# (scripts/build.sh dtf), waits for an idle machine, runs the data corpus
# (tests/corpus: each case's init -> gen-records -> train with the job as
# init wrote it, and a scikit-learn baseline on the same split), and prints
# the figure table (dtf against scikit-learn per case, AUC / accuracy / R²,
# seconds per step) as Markdown. The full table, with every metric of both,
# goes to WORK/results.json; the runner's log to WORK/run.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build=""
work=""
cases=""
train_args=""
wait_idle_s=120
do_build=1

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --cases) cases="$2"; shift 2 ;;
    --train-args) train_args="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }

build="$(realpath -m "${build:-$repo/build}")"
work="$(realpath -m "${work:-$build/bench-corpus}")"
dtf="$build/cmd/dtf"

if (( do_build )); then
  log "building dtf in $build"
  DTF_BUILD_DIR="$build" nice -n 19 bash "$repo/scripts/build.sh" dtf >&2
fi
[[ -x "$dtf" ]] || { log "no dtf binary at $dtf"; exit 1; }

python="$(bash "$repo/tests/corpus/corpus_env.sh" "$build")"

# cpu_busy, busy_cores, wait_idle.
source "$here/../idle.sh"
busy=$(wait_idle "$wait_idle_s")
log "running the corpus ($busy cores busy before)"

rm -rf "$work"
mkdir -p "$work"
args=(--dtf "$dtf" --work "$work/cases" --json "$work/results.json")
[[ -z "$cases" ]] || args+=(--cases "$cases")
[[ -z "$train_args" ]] || args+=(--train-args "$train_args")
rc=0
"$python" "$repo/tests/corpus/run_corpus.py" "${args[@]}" > "$work/run.log" 2>&1 || rc=$?
[[ -f "$work/results.json" ]] || { cat "$work/run.log" >&2; exit 1; }
# Each failure as the runner told it: its line, the command, stderr's tail.
(( rc == 0 )) || awk '/^\[FAIL\]/ { on = 1 } /^\[pass\]/ || /^$/ { on = 0 } on' \
  "$work/run.log" >&2

commit="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$python" "$here/report.py" "$work/results.json" --busy "$busy" --commit "$commit"
exit "$rc"
