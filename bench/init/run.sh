#!/usr/bin/env bash
# bench/init/run.sh [--rows N] [--keep]
#
# Time of `dtf init` (which profiles every row) on two shapes of CSV made in
# a temporary directory: a wide one (2,000 columns x 5,000 rows of ints,
# floats, strings and an id) and a long one (UCI Adult's rows repeated to N
# rows, default 2,000,000). The peer, timed in the same run on the same
# file: pandas reading it (its own type inference over every row), then
# counting each column's distinct values and describing it, the profile a
# data scientist starts from. Builds dtf first with scripts/build.sh and the
# pandas venv with tests/corpus/corpus_env.sh; waits for an idle machine
# (bench/idle.sh). Prints the seconds of each and their ratio.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${DTF_SHARED_DIR:-$repo/../shared}"
adult="$shared/data/adult/adult.data"
rows=2000000
keep=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rows) rows="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

log() { echo "bench: $*" >&2; }

log "building dtf"
nice -n 19 "$repo/scripts/build.sh" dtf >/dev/null
dtf="$repo/build/cmd/dtf"
python="$(bash "$repo/tests/corpus/corpus_env.sh" "$repo/build")"
source "$repo/bench/idle.sh"
wait_idle 300
work="$(mktemp -d "${TMPDIR:-/tmp}/dtf-bench-init.XXXXXX")"
if [[ -z "$keep" ]]; then trap 'rm -rf "$work"' EXIT; fi

log "writing $work/wide.csv (2000 columns x 5000 rows)"
awk 'BEGIN {
  srand(7); cols = 2000; n = 5000
  line = "id"
  for (c = 1; c < cols - 1; ++c) line = line ",c" c
  print line ",label"
  for (r = 0; r < n; ++r) {
    line = r
    for (c = 1; c < cols - 1; ++c) {
      k = c % 4
      if (k == 0) v = int(rand() * 100)
      else if (k == 1) v = sprintf("%.3f", rand() * 10)
      else if (k == 2) v = "s" int(rand() * 20)
      else v = (rand() < 0.02) ? "NaN" : sprintf("%.2f", rand())
      line = line "," v
    }
    print line "," int(rand() * 2)
  }
}' > "$work/wide.csv"

log "writing $work/long.csv (Adult repeated to $rows rows)"
{
  echo "age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,gender,capital_gain,capital_loss,hours_per_week,native_country,income"
  awk -v n="$rows" 'NF { a[++k] = $0 } END { for (i = 0; i < n; ++i) print a[i % k + 1] }' "$adult"
} > "$work/long.csv"

run() {  # NAME CSV LABEL
  local t0 t1 t2
  t0=$(date +%s.%N)
  "$dtf" init "$work/job-$1" --from-csv "$2" --label "$3" >/dev/null
  t1=$(date +%s.%N)
  "$python" -c 'import sys, pandas as pd
df = pd.read_csv(sys.argv[1], low_memory=False)
df.nunique(); df.describe(include="all")' "$2"
  t2=$(date +%s.%N)
  awk -v n="$1" -v a="$t0" -v b="$t1" -v c="$t2" -v s="$(stat -c %s "$2")" \
    'BEGIN { printf "%-6s %8.1f MB  %7.2f s  %7.2f s  %5.2f\n", n, s / 1e6,
             b - a, c - b, (b - a) / (c - b) }'
}

echo "input  size         dtf init  pandas    dtf/pandas"
run wide "$work/wide.csv" label
run long "$work/long.csv" income
