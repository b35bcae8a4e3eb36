#!/usr/bin/env bash
# bench/build/run.sh [--work DIR] [--what dtf,all] [--ref REF]
#                    [--cmake-args "ARGS"] [--wait-idle SECONDS]
#
# Build time of dtf from a fresh clone, the way a newcomer and CI pay it:
# for each of `dtf` (what the main command builds) and `all` (what the test
# command builds), a cold build (a new clone, an empty ccache) and then a
# warm one (another new clone, the ccache the cold build filled). Each time
# covers configure and build. Prints a table, the ten slowest objects of each
# cold build (from .ninja_log), and writes WORK/results.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work=""
what="dtf,all"
ref="HEAD"
cmake_args=""
wait_idle_s=0

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --what) what="$2"; shift 2 ;;
    --ref) ref="$2"; shift 2 ;;
    --cmake-args) cmake_args="$2"; shift 2 ;;
    --wait-idle) wait_idle_s="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

log() { echo "bench: $*" >&2; }
command -v ccache >/dev/null || { log "ccache is missing (bash scripts/deps.sh)"; exit 1; }

work="${work:-$repo/build/bench-build}"
rm -rf "$work"
mkdir -p "$work"
work="$(realpath "$work")"
results="$work/results.tsv"
: > "$results"

# cpu_busy, busy_cores, wait_idle.
source "$here/../idle.sh"

# The ten slowest objects of a build directory, from its .ninja_log.
slowest() {
  awk -F'\t' 'NR > 1 && $4 ~ /\.o$/ {
      t[$4] = ($2 - $1) / 1000 }
    END { for (o in t) printf "%8.1f s  %s\n", t[o], o }' "$1/.ninja_log" |
    sort -rn | head -10
}

# measure NAME TARGET CCACHE_DIR: a new clone, configure, build TARGET.
measure() {
  local name="$1" target="$2" cache="$3" src="$work/$1/src" busy t0 t1
  git clone -q --no-local "$repo" "$src"
  git -C "$src" checkout -q "$ref"
  busy=$(wait_idle "$wait_idle_s")
  log "$name: building $target ($busy cores busy before)"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # cmake_args is a list of options
  CCACHE_DIR="$cache" cmake -G Ninja -S "$src" -B "$src/build" \
    -DCMAKE_BUILD_TYPE=Release $cmake_args > "$work/$name.log" 2>&1
  local targets=()
  [[ "$target" == all ]] || targets=(--target "$target")
  CCACHE_DIR="$cache" cmake --build "$src/build" -j "$(nproc)" \
    "${targets[@]}" >> "$work/$name.log" 2>&1 || {
      tail -n 30 "$work/$name.log" >&2
      log "$name: the build failed; see $work/$name.log"
      exit 1
    }
  t1=$(date +%s.%N)
  local secs objects
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
  objects=$(awk -F'\t' 'NR > 1 && $4 ~ /\.o$/' "$src/build/.ninja_log" | wc -l)
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$target" "$secs" "$objects" \
    "$busy" >> "$results"
  if [[ "$name" == cold-* ]]; then
    slowest "$src/build" > "$work/$name.slowest"
  fi
  rm -rf "$src/build/tests" "$src/build/lib" "$src/build/cmd"
}

IFS=',' read -r -a whats <<< "$what"
for w in "${whats[@]}"; do
  case "$w" in dtf|all) ;; *) log "--what takes dtf and all"; exit 2 ;; esac
  cache="$work/ccache-$w"
  mkdir -p "$cache"
  CCACHE_DIR="$cache" ccache --max-size=20G >/dev/null
  measure "cold-$w" "$w" "$cache"
  measure "warm-$w" "$w" "$cache"
done

echo
printf '%-9s %-6s %10s %8s %12s\n' build target seconds objects "cores busy"
while IFS=$'\t' read -r name target secs objects busy; do
  printf '%-9s %-6s %7s s %8s %12s\n' "$name" "$target" \
    "$(awk -v s="$secs" 'BEGIN { printf "%d:%02d", s / 60, s % 60 }')" \
    "$objects" "$busy"
done < "$results"
for f in "$work"/cold-*.slowest; do
  [[ -f "$f" ]] || continue
  echo
  echo "slowest objects of $(basename "$f" .slowest):"
  cat "$f"
done

{
  echo "{"
  echo "  \"machine\": {\"cores\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //; s/"/\\"/g')\", \"date\": \"$(date -u +%FT%TZ)\"},"
  echo "  \"commit\": \"$(git -C "$repo" rev-parse "$ref")\","
  echo "  \"builds\": ["
  awk -F'\t' '{ printf "%s    {\"build\": \"%s\", \"target\": \"%s\", \"seconds\": %s, \"objects\": %s, \"busy_before\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5 } END { print "" }' "$results"
  echo "  ]"
  echo "}"
} > "$work/results.json"
log "wrote $work/results.json"
