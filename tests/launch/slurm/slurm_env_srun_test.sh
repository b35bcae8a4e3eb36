#!/usr/bin/env bash
# lib/launch/slurm against a real single-node Slurm (tests/testing/
# slurm_cluster.sh, installing slurm-wlm and munge when missing):
# ExpandHostlist beside `scontrol show hostnames`, and each srun task's
# role, index, address and peers as MakeSlurmServeCommand reads them from
# the environment srun gives it, beside that environment itself.
# Usage: slurm_env_srun_test.sh PROBE SOURCE_DIR WORK_DIR
# Exit 77 (skipped) where the cluster cannot be had (not root, no apt-get).
set -uo pipefail
probe="$(realpath "$1")"
src="$2"
work="$(realpath -m "$3")"
cluster="$src/tests/testing/slurm_cluster.sh"
dir="$(mktemp -d /tmp/dtf-slurm.XXXXXX)"

fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
out="$(bash "$cluster" start "$dir")"
rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "slurm_cluster.sh start exited $rc"
trap 'bash "$cluster" stop "$dir"' EXIT
eval "$out"
cd "$work" || exit 1
host="$(hostname -s)"

# Host lists: padded, several ranges, several prefixes, several groups.
for list in 'node[01-04]' 'x[8-12]' 'x[009-011]' 'n[01-3]' 'n[1-03]' \
    'n[1-3,7,10-12]' 'a[1-2],b3,c[08-10]' 'r[1-2]n[1-2]' 'n[1,1],a,b,a' \
    'n[1-2],,m' '[1-2]' "$host"; do
  want="$(scontrol show hostnames "$list" 2>&1)" ||
    fail "scontrol show hostnames '$list': $want"
  got="$("$probe" hostlist "$list")" || fail "probe hostlist '$list'"
  [[ "$got" == "$want" ]] ||
    fail "hostlist '$list': dtf gives [$got], scontrol gives [$want]"
done
echo "hostlists agree with scontrol show hostnames"

# Three tasks on the node: ps:0, worker:0, worker:1.
base=31500
# flags PS WORKERS GPUS_PER_NODE: SlurmTaskArgv's flags, in task_flags.
flags() {
  task_flags=(--job /shared/job/dtf.toml --run-dir /shared/runs/r1
    --run-id r1 --ps "$1" --workers "$2" --threads 0 --base-port "$base"
    --gpus-per-node "$3")
}
srun_() { timeout 60 srun --kill-on-bad-exit=1 "$@"; }
# shellcheck disable=SC2016  # expanded by each task's shell
envs="$(srun_ -n 3 --ntasks-per-node=3 bash -c \
  'echo "$SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID $SLURM_STEP_TASKS_PER_NODE"')" ||
  fail "srun env: $envs"
# srun prints the tasks' lines as they come: in task order for the lists.
envs="$(sort -n <<<"$envs")"
flags 1 2 0
got="$(srun_ -n 3 --ntasks-per-node=3 "$probe" task slurm "${task_flags[@]}")" ||
  fail "srun probe: $got"
echo "$got"
[[ "$(wc -l <<<"$got")" -eq 3 ]] || fail "expected 3 lines from the probe"
ps_list="" workers_list=""
while read -r procid node localid tpn; do
  [[ "$tpn" == 3 ]] || fail "SLURM_STEP_TASKS_PER_NODE=$tpn, expected 3"
  if ((procid < 1)); then
    name="ps:$procid"
    ps_list+="${ps_list:+,}$node:$((base + localid))"
  else
    name="worker:$((procid - 1))"
    workers_list+="${workers_list:+,}$node:$((base + localid))"
  fi
  line="$(grep "^procid=$procid " <<<"$got")" || fail "no line for task $procid"
  [[ "$line" == *" name=$name address=$node:$((base + localid)) "* ]] ||
    fail "task $procid: expected $name at $node:$((base + localid)): $line"
  dir_name="${name/:/-}"
  [[ "$line" == *" gpu=- dir=/shared/runs/r1/$dir_name" ]] ||
    fail "task $procid: gpu or dir: $line"
done <<<"$envs"
while read -r line; do
  [[ "$line" == *" ps=$ps_list workers=$workers_list "* ]] ||
    fail "peers: expected ps=$ps_list workers=$workers_list: $line"
done <<<"$got"
echo "srun tasks resolve as their environment says"

# Workers with GPUs (none are needed: the layout only names them).
flags 1 2 2
got="$(srun_ -n 3 --ntasks-per-node=3 "$probe" task slurm "${task_flags[@]}")" ||
  fail "srun probe with gpus: $got"
grep -q "name=worker:0 .* gpu=0 " <<<"$got" || fail "worker:0 gpu: $got"
grep -q "name=worker:1 .* gpu=1 " <<<"$got" || fail "worker:1 gpu: $got"
grep -q "name=ps:0 .* gpu=- " <<<"$got" || fail "ps:0 gpu: $got"

# A run of another size: every task fails naming SLURM_NTASKS.
flags 1 3 0
err="$(srun_ -n 3 --ntasks-per-node=3 "$probe" task slurm "${task_flags[@]}" 2>&1)" &&
  fail "probe accepted 3 tasks for 1 ps + 3 workers"
grep -q 'SLURM_NTASKS="3": the run has 1 parameter servers and 3 workers (4 tasks)' \
  <<<"$err" || fail "mismatch message: $err"
# A cyclic distribution over one node is still a block one: accepted.
flags 1 2 0
srun_ -n 3 --distribution=cyclic "$probe" task slurm "${task_flags[@]}" >/dev/null ||
  fail "cyclic distribution on one node"
echo "a run of another size is refused naming SLURM_NTASKS"

# The batch script as RenderBatchScript writes it, through sbatch: its
# #SBATCH lines and srun line as Slurm reads them, each task resolving.
runs="$work/runs"
mkdir -p "$runs"
"$probe" script 1 2 "$base" "$runs" >"$work/sbatch.sh" || fail "render script"
job="$(sbatch --parsable "$work/sbatch.sh")" || fail "sbatch: $job"
deadline=$((SECONDS + 120))
while :; do
  state="$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*')"
  case "$state" in
    JobState=COMPLETED) break ;;
    JobState=FAILED | JobState=CANCELLED | JobState=TIMEOUT | JobState=NODE_FAIL)
      cat "$runs"/slurm-"$job".* >&2
      fail "batch job $job: $state" ;;
  esac
  ((SECONDS < deadline)) || fail "batch job $job not done in 120s ($state)"
  sleep 0.2
done
out="$(cat "$runs/slurm-$job.out")"
echo "$out"
[[ "$(grep -c '^procid=' <<<"$out")" -eq 3 ]] || fail "batch job output: $out"
grep -q "^procid=0 name=ps:0 address=$host:$base ps=$host:$base " <<<"$out" ||
  fail "batch ps:0: $out"
grep -q "^procid=2 name=worker:1 address=$host:$((base + 2)) .* dir=$runs/worker-1 note=a b'c$" \
  <<<"$out" || fail "batch worker:1: $out"
[[ ! -s "$runs/slurm-$job.err" ]] || fail "batch stderr: $(cat "$runs/slurm-$job.err")"
echo "PASS"
