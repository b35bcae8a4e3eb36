#!/usr/bin/env bash
# spark_cluster.sh start DIR BUILD_DIR | stop DIR | alive DIR | env DIR
#
# A real Spark standalone cluster on loopback for the Spark tests: one
# master and two workers, each worker with its own work directory under
# DIR, from PyPI's pyspark (it carries Spark's jars and spark-class) in
# BUILD_DIR/venv-spark and Debian's Java 17 (scripts/deps.sh --test
# installs both). `start` picks free ports, starts the three JVMs, waits
# until the master lists both workers ALIVE, and writes DIR/env
# (SPARK_MASTER_URL, SPARK_HOME, SPARK_SUBMIT, SPARK_PYTHON, JAVA_HOME,
# SPARK_MASTER_UI, one per line, ready to source) and prints it; a cluster
# already running in DIR is re-used. Each worker offers
# DTF_SPARK_WORKER_CORES cores (default 2) and 2 GiB, and removes the
# directories of applications that have ended (each holds a copy of what
# the application shipped, ~90 MB for dtf's runtime) every 30 s
# (spark.worker.cleanup.*). `stop` kills the JVMs by their own pids
# (DIR/*.pid), waits for them and removes the workers' work directories;
# `alive` exits 0 while the master runs.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start DIR BUILD_DIR | stop DIR | alive DIR | env DIR" >&2
  exit 2
fi
daemons=(master worker1 worker2)

alive() {
  [[ -f "$dir/master.pid" ]] && kill -0 "$(cat "$dir/master.pid")" 2>/dev/null
}

stop_all() {
  local pids=() name pid
  for name in "${daemons[@]}"; do
    [[ -f "$dir/$name.pid" ]] || continue
    pid="$(cat "$dir/$name.pid")"
    # Workers first: each kills its executors as it goes.
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for _ in $(seq 1 100); do
    local left=0
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && left=1
    done
    [[ $left -eq 0 ]] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for name in "${daemons[@]}"; do rm -f "$dir/$name.pid"; done
  # What the applications left: their shipped archives and executor logs.
  rm -rf "$dir/work1" "$dir/work2"
}

case "$cmd" in
  alive)
    alive
    exit $?
    ;;
  env)
    cat "$dir/env"
    exit 0
    ;;
  stop)
    stop_all
    exit 0
    ;;
  start) ;;
  *)
    echo "$0: unknown command '$cmd'" >&2
    exit 2
    ;;
esac

build_dir="${3:?start needs BUILD_DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if alive && [[ -f "$dir/env" ]]; then
  cat "$dir/env"
  exit 0
fi
stop_all
python="$(bash "$(dirname "${BASH_SOURCE[0]}")/spark_env.sh" "$build_dir")"
spark_home="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
java_home="${JAVA_HOME:-}"
if [[ -z "$java_home" ]]; then
  java="$(command -v java || true)"
  [[ -n "$java" ]] || { echo "spark_cluster: no java (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
  java_home="$(dirname "$(dirname "$(readlink -f "$java")")")"
fi
read -r -a ports < <(python3 - <<'PY'
import socket
held, ports = [], []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
    ports.append(s.getsockname()[1])
print(" ".join(map(str, ports)))
PY
)
port="${ports[0]}" ui="${ports[1]}"
master_url="spark://127.0.0.1:$port"
cores="${DTF_SPARK_WORKER_CORES:-2}"

export SPARK_HOME="$spark_home" JAVA_HOME="$java_home"
export SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
export SPARK_DAEMON_MEMORY=256m
# An ended application's directory goes within a minute, not after the
# default 7 days; running applications' directories are left alone.
export SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=true \
-Dspark.worker.cleanup.interval=30 -Dspark.worker.cleanup.appDataTtl=30"
export SPARK_LOG_DIR="$dir/logs" SPARK_CONF_DIR="$dir/conf"
mkdir -p "$dir/logs" "$dir/conf"
cat > "$dir/conf/log4j2.properties" <<'LOG'
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.master.name = org.apache.spark.deploy
logger.master.level = info
LOG
class="$spark_home/bin/spark-class"
setsid "$class" org.apache.spark.deploy.master.Master --host 127.0.0.1 \
  --port "$port" --webui-port "$ui" > "$dir/logs/master.log" 2>&1 < /dev/null &
echo $! > "$dir/master.pid"
for w in 1 2; do
  mkdir -p "$dir/work$w"
  setsid "$class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 \
    --cores "$cores" --memory 2g --work-dir "$dir/work$w" --webui-port 0 \
    "$master_url" > "$dir/logs/worker$w.log" 2>&1 < /dev/null &
  echo $! > "$dir/worker$w.pid"
done
for _ in $(seq 1 240); do
  for name in "${daemons[@]}"; do
    if ! kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null; then
      echo "spark_cluster: the $name exited; its log ($dir/logs/$name.log):" >&2
      tail -20 "$dir/logs/$name.log" >&2
      stop_all
      exit 1
    fi
  done
  n="$(curl -s --max-time 5 "http://127.0.0.1:$ui/json/" 2>/dev/null |
       python3 -c 'import json,sys
try: print(sum(1 for w in json.load(sys.stdin)["workers"] if w["state"] == "ALIVE"))
except Exception: print(0)' || echo 0)"
  if [[ "$n" == 2 ]]; then
    cat > "$dir/env" <<ENV
SPARK_MASTER_URL=$master_url
SPARK_MASTER_UI=http://127.0.0.1:$ui
SPARK_HOME=$spark_home
SPARK_SUBMIT=$spark_home/bin/spark-submit
SPARK_PYTHON=$python
JAVA_HOME=$java_home
ENV
    cat "$dir/env"
    exit 0
  fi
  sleep 0.25
done
echo "spark_cluster: the workers did not register with $master_url in 60 s;" \
     "logs in $dir/logs" >&2
stop_all
exit 1
