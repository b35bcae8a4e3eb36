// What `dtf status`, `logs` and `stop` need of a Slurm run's tasks: their
// files are on storage this machine shares with the nodes, their job is
// Slurm's (squeue / scontrol / sacct, scancel).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/slurm_backend.h"
#include "lib/launch/slurm/slurm_job.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

// The run's Slurm job or step as tasks.json records it; "" before one.
std::string SlurmJobOf(const RunRecord& record) {
  const auto it = record.backend.find(std::string(slurm::kSlurmJobKey));
  return it == record.backend.end() ? std::string() : it->second;
}

class SlurmRunSource final : public RunSource {
 public:
  explicit SlurmRunSource(const Plan& plan) : plan_(plan) {}

  // The exit.json files are on shared storage already; a task without one
  // once the job is over is recorded stopped (after `dtf stop`) or lost.
  void FetchExits(RunView* run) override {
    const std::string& job = SlurmJobOf(run->record);
    if (!job.empty()) {
      StatusOr<slurm::SlurmJobState> s = slurm::QuerySlurmJob(job);
      if (!s.ok() || !s->over) return;
    }
    std::error_code ec;
    const bool stopped = fs::exists(fs::path(run->dir) / kStopFile, ec);
    for (const TaskPlan& t : plan_.tasks) {
      if (run->exits.count(t.name()) > 0) continue;
      ExitRecord e;
      e.task = t.name();
      e.state = stopped ? TaskState::kStopped : TaskState::kLost;
      e.finished_ms = NowMs();
      if (WriteExitRecord(t.exit_file, e).ok()) run->exits[t.name()] = e;
    }
  }

  StatusOr<TaskStopReport> StopTasks(const RunView& run,
                                     std::chrono::milliseconds grace) override {
    TaskStopReport report;
    const std::string& job = SlurmJobOf(run.record);
    if (job.empty()) return report;
    DTF_ASSIGN_OR_RETURN(slurm::SlurmJobState s, slurm::QuerySlurmJob(job));
    if (s.over) return report;
    for (const TaskRecord& t : run.record.tasks) {
      if (run.exits.count(t.task) == 0) report.signalled.push_back(t.task);
    }
    DTF_RETURN_IF_ERROR(slurm::CancelSlurmJob(job));
    DTF_ASSIGN_OR_RETURN(s, slurm::WaitSlurmJobOver(job, grace));
    if (!s.over) {
      DTF_RETURN_IF_ERROR(slurm::CancelSlurmJob(job, "KILL"));
      report.killed = report.signalled;
      DTF_ASSIGN_OR_RETURN(
          s, slurm::WaitSlurmJobOver(job, std::chrono::seconds(30)));
      if (!s.over) {
        return UnavailableError(StrCat("Slurm job ", job, " is still ", s.state,
                                       " after scancel --signal=KILL"));
      }
    }
    return report;
  }

  StatusOr<std::unique_ptr<LineTail>> Follow(const TaskPlan&,
                                             const std::string& path) override {
    return std::make_unique<LineTail>(path);
  }

  StatusOr<ChiefRoute> RouteToChief() override {
    return FailedPreconditionError(StrCat(
        "the chief of run ", plan_.run_id,
        " runs on a Slurm node; its address (in ", plan_.chief().ready_file,
        ") is reached from the cluster's nodes only"));
  }

 private:
  const Plan& plan_;
};

}  // namespace

std::unique_ptr<RunSource> OpenSlurmRunSource(const Plan& plan) {
  return std::make_unique<SlurmRunSource>(plan);
}

}  // namespace dtf::launch
