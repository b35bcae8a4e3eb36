# Sourced by the bench scripts: how busy this machine is, and a wait for it
# to go idle before a measurement. The sourcing script defines log().

# Busy CPU time of the whole machine (all cores), in clock ticks.
cpu_busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# Cores busy over the next 2 seconds (this shell is asleep meanwhile).
busy_cores() {
  local b0 b1
  b0=$(cpu_busy); sleep 2; b1=$(cpu_busy)
  awk -v d=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", d / hz / 2 }'
}

# wait_idle SECONDS: waits, at most SECONDS, until fewer than 0.15 cores are
# busy (with SECONDS 0, reads once and does not wait), then prints the cores
# busy at the end.
wait_idle() {
  local wait_s="$1" deadline=$(( $(date +%s) + $1 )) busy logged=""
  while :; do
    busy=$(busy_cores)
    if (( wait_s <= 0 )) || awk -v b="$busy" 'BEGIN { exit !(b < 0.15) }'; then
      break
    fi
    if (( $(date +%s) >= deadline )); then
      log "still $busy cores busy after ${wait_s} s; measuring anyway"
      break
    fi
    [[ -n "$logged" ]] || log "waiting for an idle machine ($busy cores busy)"
    logged=1
    sleep 3
  done
  echo "$busy"
}
