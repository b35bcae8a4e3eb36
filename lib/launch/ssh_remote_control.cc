// What is done to the tasks of a recorded SSH run whose launcher is gone
// (dtf stop, dtf status): signal them, fetch their exit records.
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/ssh_backend.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

}  // namespace

void FetchRemoteExits(RunView* run) {
  std::map<std::string, std::unique_ptr<RemoteHost>> hosts;
  for (const TaskPlan& t : run->plan.tasks) {
    if (run->exits.count(t.name()) != 0) continue;
    auto it = hosts.find(t.host);
    if (it == hosts.end()) {
      StatusOr<std::unique_ptr<RemoteHost>> host =
          ConnectTaskHost(run->plan, t);
      it = hosts.emplace(t.host, host.ok() ? *std::move(host) : nullptr).first;
    }
    if (it->second == nullptr) continue;
    StatusOr<std::optional<std::string>> exit =
        it->second->ReadAt(t.exit_file, 0, 64 << 10);
    if (!exit.ok() || !exit->has_value() || (*exit)->empty()) continue;
    const std::string local =
        (fs::path(run->dir) / TaskDirName(t.role, t.index) / kExitFile)
            .string();
    if (!WriteFileAtomically(local, **exit).ok()) continue;
    StatusOr<std::optional<ExitRecord>> record = ReadExitRecord(local);
    if (record.ok() && record->has_value()) run->exits[t.name()] = **record;
  }
}

StatusOr<RemoteStopReport> StopRemoteTasks(const Plan& plan,
                                           std::chrono::milliseconds grace) {
  RemoteStopReport report;
  std::map<std::string, std::unique_ptr<RemoteHost>> hosts;
  std::vector<std::string> errors;
  for (const TaskPlan& t : plan.tasks) {
    if (hosts.count(t.host) != 0) continue;
    StatusOr<std::unique_ptr<RemoteHost>> host = ConnectTaskHost(plan, t);
    if (!host.ok()) {
      errors.push_back(std::string(Message(host.status())));
      hosts[t.host] = nullptr;
    } else {
      hosts[t.host] = *std::move(host);
    }
  }
  auto tasks_on = [&](const std::string& host) {
    std::vector<const TaskPlan*> out;
    for (const TaskPlan& t : plan.tasks) {
      if (t.host == host) out.push_back(&t);
    }
    return out;
  };
  for (int round = 0; round < 2; ++round) {
    for (auto& [name, host] : hosts) {
      if (host == nullptr) continue;
      StatusOr<std::vector<std::string>> s =
          host->SignalTasks(plan, tasks_on(name), round == 1);
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
      for (const TaskPlan& t : plan.tasks) {
        RemoteHost* host = hosts[t.host].get();
        if (host == nullptr) continue;
        StatusOr<std::optional<std::string>> exit =
            host->ReadAt(t.exit_file, 0, 64 << 10);
        if (exit.ok() && exit->has_value() && !(*exit)->empty()) {
          (void)WriteFileAtomically((fs::path(plan.run_dir) /
                                     TaskDirName(t.role, t.index) / kExitFile)
                                        .string(),
                                    **exit);
        } else {
          all = false;
        }
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
}  // namespace dtf::launch
