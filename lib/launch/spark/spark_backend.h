// The Spark backend: every task of a plan as one task of a barrier stage
// of a Spark application (lib/launch/spark/spark_driver.h).
//
// Place checks what can be checked before anything is submitted: that
// spark-submit is there and, for a standalone master, that the master
// answers (a clear error naming it otherwise); and packs the runtime and
// the job (the archives an SSH launch ships, content-hashed) unless
// spark.ship is false. Prepare writes the driver to <run dir>/driver.py
// (the run directory, on storage the executors share, already holds the
// secret, mode 0600, and the TLS files). StartTasks runs spark-submit
// (client mode: the driver runs here, in spark-submit's process group,
// output to <run dir>/spark-submit.out and .err). Every task writes its
// ready file, its output and its exit.json into its task directory; a look
// reads them there and reaps spark-submit. Tasks still without an
// exit.json once spark-submit has exited are recorded lost, quoting the
// driver's own lines ("too few executors", "the barrier stage failed").
// Stopping ends the driver (SIGTERM to spark-submit's process group,
// SIGKILL after the grace): Spark then kills the application's executors,
// each task's `dtf task spark` gets SIGTERM as its Python worker dies and
// stops its dtf serve. No task is ever restarted alone: a task that fails
// fails the barrier stage, so a worker other than the chief that fails
// fails the run (naming it), where the local and SSH backends go on
// without it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/dir_tasks.h"
#include "lib/launch/process.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {

// tasks.json's keys for the driver (spark-submit's pid and start time) and
// the application's id once the driver has told it.
inline constexpr char kSparkSubmitPidKey[] = "spark_submit_pid";
inline constexpr char kSparkSubmitStartKey[] = "spark_submit_start";
inline constexpr char kSparkAppKey[] = "spark_app";

class SparkBackend final : public Backend {
 public:
  explicit SparkBackend(const RunOptions& options);
  ~SparkBackend() override;

  BackendKind kind() const override { return BackendKind::kSpark; }
  StatusOr<Plan> Place(PlanRequest request) override;
  void Attach(const Plan* plan, BackendEvents* events) override;
  Status Prepare(const RunTls* tls) override;
  std::vector<StatusOr<ProcessId>> StartTasks(Role role) override;
  StatusOr<ProcessId> StartAgain(size_t i, bool all) override;
  Status Tend() override { return OkStatus(); }
  Status Look() override;
  std::chrono::milliseconds LookEvery() const override {
    return std::chrono::milliseconds(200);
  }
  bool Reachable(size_t) const override { return true; }
  bool StopsOnRequest() const override { return true; }
  Status StopTasks(bool final) override;
  std::string StderrTail(size_t i) override;
  std::string ChiefFailed(size_t i, const TaskEnd& end) override;
  std::string NotReady(size_t i) const override;
  void FetchMetrics() override {}  // the chief writes it on shared storage
  std::map<std::string, std::string> RecordFields() const override;

 private:
  void CheckExits();
  // Reaps spark-submit; sets over_ once it has exited.
  void CheckDriver();
  // Tasks without an exit.json once the driver has been gone a while.
  void RecordMissing(bool force);
  // The driver's own lines, without their "dtf-spark: ".
  std::vector<std::string> DriverLines() const;
  // What the driver said of a failure ("too few executors", "the barrier
  // stage failed"), else (`or_tail`) the last lines of spark-submit's
  // stderr: "; <what>" or "".
  std::string DriverSays(bool or_tail) const;

  std::chrono::milliseconds grace_;
  size_t failure_lines_;
  std::function<void(std::string_view)> on_note_;
  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  DirTasks tasks_;
  bool submitted_ = false;
  ProcessId submit_;
  std::optional<ExitInfo> submit_exit_;
  std::string app_;  // the application's id, from the driver's stderr
  bool over_ = false;
  std::chrono::steady_clock::time_point over_at_;
  std::optional<size_t> first_failed_;
  Status stage_failure_;
};

StatusOr<std::unique_ptr<Run>> StartSparkRun(PlanRequest request,
                                             RunOptions options);

// What `dtf status`, `logs` and `stop` need of a Spark run's tasks: their
// files on shared storage, the driver by the pid tasks.json records.
std::unique_ptr<RunSource> OpenSparkRunSource(const Plan& plan);

}  // namespace dtf::launch
