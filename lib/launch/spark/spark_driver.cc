#include "lib/launch/spark/spark_driver.h"

#include <nlohmann/json.hpp>

#include "lib/base/strings.h"

namespace dtf::launch::spark {
namespace {

// The driver; @SPEC@ becomes a Python string literal holding the run's
// JSON (a JSON string literal is one).
constexpr char kDriverTemplate[] = R"PY(#!/usr/bin/env python3
# The Spark driver of a dtf run, written by `dtf launch` (docs/launch.md,
# "Spark"). One barrier stage of ps + workers tasks; each task becomes one
# `dtf serve` through `dtf task spark`.
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import socket

from pyspark import BarrierTaskContext, SparkConf, SparkContext

SPEC = json.loads(@SPEC@)
FAILED = "dtf-task-failed: "


def log(text):
    print("dtf-spark: " + text, file=sys.stderr, flush=True)


def die_with_parent():
    # SIGTERM when the Python worker running this task dies (Spark killed
    # the task): `dtf task spark` then stops its dtf serve and records it.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def here(path):
    return path if os.path.isabs(path) else os.path.abspath(path)


def run_task(_):
    ctx = BarrierTaskContext.get()
    me = ctx.partitionId()
    address = ctx.getTaskInfos()[me].address
    host = address.rsplit(":", 1)[0] if ":" in address else address
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    peers = ctx.allGather("%s:%d" % (host, port))
    argv = list(SPEC["task"])
    argv[0] = here(argv[0])
    if SPEC["shipped"]:
        root = os.path.dirname(os.path.dirname(argv[0]))
        for name in ("bin/dtf", "libexec/dtf"):
            path = os.path.join(root, name)
            if os.path.exists(path):
                os.chmod(path, 0o755)
        job = argv.index("--job") + 1
        argv[job] = here(argv[job])
    argv += ["--task-id", str(me), "--addresses", ",".join(peers)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=die_with_parent)
    _, err = proc.communicate()
    if proc.returncode != 0:
        name = ("ps:%d" % me if me < SPEC["ps"]
                else "worker:%d" % (me - SPEC["ps"]))
        tail = err.decode("utf-8", "replace").strip()[-1500:]
        raise RuntimeError("%stask %s on %s exited with status %d%s" %
                           (FAILED, name, host, proc.returncode,
                            (": " + tail) if tail else ""))
    return [me]


def executors(sc):
    # Registered executors (the driver's block manager is not one).
    return max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)


def main():
    tasks = SPEC["ps"] + SPEC["workers"]
    conf = SparkConf().setAppName("dtf-" + SPEC["run_id"])
    sc = SparkContext(conf=conf)
    sc.setLogLevel("WARN")
    log("application %s on %s" % (sc.applicationId, SPEC["master"]))
    start = time.time()
    deadline = start + SPEC["slot_wait"]
    have = executors(sc)
    while have < tasks and time.time() < deadline:
        time.sleep(0.1)
        have = executors(sc)
    if have < tasks:
        log("too few executors: the cluster gave %d of the %d the barrier "
            "stage needs at once (%d ps + %d workers, one executor of %d "
            "core%s each) in %d s (spark.slot_wait); free cores on %s or "
            "lower --workers" % (have, tasks, SPEC["ps"], SPEC["workers"],
                                 SPEC["cores"],
                                 "" if SPEC["cores"] == 1 else "s",
                                 SPEC["slot_wait"], SPEC["master"]))
        sc.stop()
        sys.exit(3)
    log("%d executors in %.2f s; starting the barrier stage of %d tasks" %
        (have, time.time() - start, tasks))
    try:
        sc.parallelize(range(tasks), tasks).barrier() \
          .mapPartitions(run_task).collect()
    except Exception as e:  # Py4JJavaError and the like
        text = str(e)
        at = text.find(FAILED)
        if at >= 0:
            why = text[at + len(FAILED):].split("\n\tat ")[0]
            why = why.split("\n  File ")[0].strip()
            log("the barrier stage failed: " + why)
        else:
            log("the barrier stage failed: " + text.strip().split("\n")[0])
        sc.stop()
        sys.exit(1)
    log("the barrier stage finished")
    sc.stop()


if __name__ == "__main__":
    main()
)PY";

}  // namespace

std::vector<std::string> SparkSubmitArgv(const SparkProfile& profile,
                                         const SparkApp& app) {
  const int tasks = app.spec.ps + app.spec.workers;
  const int cores = profile.executor_cores;
  std::vector<std::pair<std::string, std::string>> conf = {
      {"spark.executor.cores", std::to_string(cores)},
      {"spark.task.cpus", std::to_string(cores)},
      {"spark.executor.memory", profile.executor_memory},
      {"spark.executor.instances", std::to_string(tasks)},
      {"spark.cores.max", std::to_string(tasks * cores)},
      {"spark.dynamicAllocation.enabled", "false"},
      {"spark.stage.maxConsecutiveAttempts", "1"},
      {"spark.task.maxFailures", "1"},
      {"spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s"},
      {"spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "10"},
      {"spark.python.worker.reuse", "false"},
      {"spark.pyspark.python", profile.python},
      {"spark.pyspark.driver.python", profile.python},
  };
  for (const auto& [name, value] : app.env) {
    conf.emplace_back(StrCat("spark.executorEnv.", name), value);
  }
  // The profile's own settings come last: spark-submit takes the last.
  conf.insert(conf.end(), profile.conf.begin(), profile.conf.end());
  std::vector<std::string> argv = {
      profile.spark_submit,      "--master",          profile.master,
      "--deploy-mode",           profile.deploy_mode, "--name",
      StrCat("dtf-", app.run_id)};
  for (const auto& [name, value] : conf) {
    argv.push_back("--conf");
    argv.push_back(StrCat(name, "=", value));
  }
  if (!app.archives.empty()) {
    std::string list;
    for (const auto& [path, alias] : app.archives) {
      if (!list.empty()) list += ",";
      StrAppend(&list, path, "#", alias);
    }
    argv.push_back("--archives");
    argv.push_back(list);
  }
  argv.push_back(StrCat(app.run_dir, "/", kDriverFile));
  return argv;
}

std::string SparkDriverText(const SparkProfile& profile, const SparkApp& app) {
  nlohmann::ordered_json spec = {
      {"run_id", app.run_id},
      {"master", profile.master},
      {"ps", app.spec.ps},
      {"workers", app.spec.workers},
      {"cores", profile.executor_cores},
      {"slot_wait", profile.slot_wait},
      {"shipped", !app.archives.empty()},
      {"task", SparkTaskArgv(app.spec)},
  };
  const std::string literal = nlohmann::json(spec.dump()).dump();
  std::string text = kDriverTemplate;
  const size_t at = text.find("@SPEC@");
  text.replace(at, 6, literal);
  return text;
}

}  // namespace dtf::launch::spark
