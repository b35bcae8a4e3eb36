# Sourced by the bench scripts: timing a command with the CPU it and the
# rest of the machine used. They use `work` (the bench's work directory)
# and `wait_idle_s` (--wait-idle; 0: no wait); the sourcing script defines
# log().

# cpu_busy, busy_cores, wait_idle.
source "$(dirname "${BASH_SOURCE[0]}")/idle.sh"

now_ns() { date +%s%N; }

# CPU seconds used so far by this shell's finished children (bash `times`,
# second line), from WORK/.times, which the caller fills in this shell.
children_cpu() {
  awk 'NR == 2 {
    s = 0
    for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
    printf "%.3f\n", s }' "$work/.times"
}

# measured NAME CMD...: runs CMD; WORK/NAME.cpu gets its wall seconds, the
# CPU seconds it (and its children: every task) used, and the CPU seconds
# the rest of the machine used meanwhile (noise on a shared machine).
# CMD's status is kept in WORK/NAME.rc; a failure does not stop the script.
measured() {
  local name="$1"; shift
  local t0 b0 c0 t1 b1 c1 rc=0
  (( wait_idle_s <= 0 )) || wait_idle "$wait_idle_s" > /dev/null
  times > "$work/.times"; c0=$(children_cpu); b0=$(cpu_busy); t0=$(now_ns)
  "$@" || rc=$?
  t1=$(now_ns); b1=$(cpu_busy); times > "$work/.times"; c1=$(children_cpu)
  echo "$rc" > "$work/$name.rc"
  awk -v t0="$t0" -v t1="$t1" -v b0="$b0" -v b1="$b1" -v c0="$c0" -v c1="$c1" \
    -v hz="$(getconf CLK_TCK)" 'BEGIN {
      own = c1 - c0; busy = (b1 - b0) / hz; other = busy - own
      if (other < 0) other = 0
      printf "{\"wall\": %.6f, \"cpu\": %.3f, \"other_cpu\": %.3f}\n",
        (t1 - t0) / 1e9, own, other }' > "$work/$name.cpu"
}
