// What `dtf status`, `logs` and `stop` need of a local run's tasks: they
// are processes of this machine with their files here.
#include <string>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/log_tail.h"

namespace dtf::launch {
namespace {

class LocalRunSource final : public RunSource {
 public:
  explicit LocalRunSource(const Plan& plan) : plan_(plan) {}

  // Each task's exit.json is written here by its supervisor (or by
  // ReconcileRun): nothing to fetch.
  void FetchExits(RunView*) override {}

  StatusOr<TaskStopReport> StopTasks(const RunView& run,
                                     std::chrono::milliseconds grace) override {
    TaskStopReport report;
    std::vector<std::pair<std::string, ProcessId>> groups;
    for (const TaskRecord& t : run.record.tasks) {
      // Without a start time a recycled pid cannot be told apart.
      if (t.process.pid <= 0 || t.process.start_ticks == 0) continue;
      if (GroupAlive(t.process)) report.signalled.push_back(t.task);
      groups.emplace_back(t.task, t.process);
    }
    report.killed = StopGroups(groups, grace, nullptr, IsParameterServer);
    return report;
  }

  StatusOr<std::unique_ptr<LineTail>> Follow(const TaskPlan&,
                                             const std::string& path) override {
    return std::make_unique<LineTail>(path);
  }

  StatusOr<ChiefRoute> RouteToChief() override {
    return FailedPreconditionError(
        StrCat("the chief of run ", plan_.run_id, " runs on this machine, at ",
               plan_.chief().address(), "; there is no other way to it"));
  }

 private:
  const Plan& plan_;
};

}  // namespace

std::unique_ptr<RunSource> OpenLocalRunSource(const Plan& plan) {
  return std::make_unique<LocalRunSource>(plan);
}

}  // namespace dtf::launch
