// What `dtf status`, `logs` and `stop` need of a recorded SSH run's tasks,
// its launcher there or gone: their exit records, logs and signals on their
// hosts, and a tunnel to the chief.
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/ssh/ssh_backend.h"
#include "lib/launch/ssh/tunnel.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class SshRunSource final : public RunSource {
 public:
  explicit SshRunSource(const Plan& plan) : plan_(plan) {}

  void FetchExits(RunView* run) override;
  StatusOr<TaskStopReport> StopTasks(const RunView& run,
                                     std::chrono::milliseconds grace) override;
  StatusOr<std::unique_ptr<LineTail>> Follow(const TaskPlan& task,
                                             const std::string& path) override;
  StatusOr<ChiefRoute> RouteToChief() override;

 private:
  // The connection to `task`'s host, made once (a failure too).
  StatusOr<RemoteHost*> HostOf(const TaskPlan& task);
  // Copies task t's exit.json from its host into `run_dir`; false when
  // there is none yet (or it cannot be read).
  bool CopyExit(const TaskPlan& t, const std::string& run_dir);

  const Plan& plan_;
  std::map<std::string, StatusOr<std::unique_ptr<RemoteHost>>> hosts_;
  std::unique_ptr<ssh::Tunnel> tunnel_;
};

StatusOr<RemoteHost*> SshRunSource::HostOf(const TaskPlan& task) {
  auto it = hosts_.find(task.host);
  if (it == hosts_.end()) {
    it = hosts_.emplace(task.host, ConnectTaskHost(plan_, task)).first;
  }
  if (!it->second.ok()) return it->second.status();
  return it->second->get();
}

bool SshRunSource::CopyExit(const TaskPlan& t, const std::string& run_dir) {
  StatusOr<RemoteHost*> host = HostOf(t);
  if (!host.ok()) return false;
  StatusOr<std::optional<std::string>> exit =
      (*host)->ReadAt(t.exit_file, 0, 64 << 10);
  if (!exit.ok() || !exit->has_value() || (*exit)->empty()) return false;
  const std::string local =
      (fs::path(run_dir) / TaskDirName(t.role, t.index) / kExitFile).string();
  return WriteFileAtomically(local, **exit).ok();
}

void SshRunSource::FetchExits(RunView* run) {
  for (const TaskPlan& t : run->plan.tasks) {
    if (run->exits.count(t.name()) != 0) continue;
    if (!CopyExit(t, run->dir)) continue;
    StatusOr<std::optional<ExitRecord>> record = ReadExitRecord(
        (fs::path(run->dir) / TaskDirName(t.role, t.index) / kExitFile)
            .string());
    if (record.ok() && record->has_value()) run->exits[t.name()] = **record;
  }
}

StatusOr<TaskStopReport> SshRunSource::StopTasks(
    const RunView&, std::chrono::milliseconds grace) {
  TaskStopReport report;
  std::vector<std::string> errors;
  std::vector<std::string> reached;
  std::set<std::string> seen;
  for (const TaskPlan& t : plan_.tasks) {
    if (!seen.insert(t.host).second) continue;
    StatusOr<RemoteHost*> host = HostOf(t);
    if (!host.ok()) {
      errors.push_back(std::string(Message(host.status())));
    } else {
      reached.push_back(t.host);
    }
  }
  auto tasks_on = [&](const std::string& host) {
    std::vector<const TaskPlan*> out;
    for (const TaskPlan& t : plan_.tasks) {
      if (t.host == host) out.push_back(&t);
    }
    return out;
  };
  for (int round = 0; round < 2; ++round) {
    for (const std::string& name : reached) {
      StatusOr<std::vector<std::string>> s =
          hosts_.at(name).value()->SignalTasks(plan_, tasks_on(name),
                                               round == 1);
      if (!s.ok()) {
        errors.push_back(std::string(Message(s.status())));
        continue;
      }
      auto& into = round == 0 ? report.signalled : report.killed;
      into.insert(into.end(), s->begin(), s->end());
    }
    if (round == 0 && report.signalled.empty()) break;
    // Until every exit.json is there, or grace has passed.
    const auto until = Clock::now() + grace;
    for (;;) {
      bool all = true;
      for (const TaskPlan& t : plan_.tasks) {
        if (!hosts_.at(t.host).ok()) continue;
        if (!CopyExit(t, plan_.run_dir)) all = false;
      }
      if (all || Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!errors.empty() && report.signalled.empty()) {
    std::string lines;
    for (const std::string& e : errors) StrAppend(&lines, "\n  ", e);
    return UnavailableError(StrCat("stop:", lines));
  }
  return report;
}

StatusOr<std::unique_ptr<LineTail>> SshRunSource::Follow(
    const TaskPlan& task, const std::string& path) {
  DTF_ASSIGN_OR_RETURN(RemoteHost * host, HostOf(task));
  return RemoteTail(host, path);
}

StatusOr<ChiefRoute> SshRunSource::RouteToChief() {
  // The chief's port may not be reachable from here: through its host.
  const TaskPlan& c = plan_.chief();
  DTF_ASSIGN_OR_RETURN(
      tunnel_,
      ssh::Tunnel::Open(TargetFor(plan_, c.host, c.ssh_user, c.ssh_port),
                        c.host, c.port));
  return ChiefRoute{tunnel_->local_address(), StrCat("ssh tunnel to ", c.host)};
}

}  // namespace

std::unique_ptr<RunSource> OpenSshRunSource(const Plan& plan) {
  return std::make_unique<SshRunSource>(plan);
}

}  // namespace dtf::launch
