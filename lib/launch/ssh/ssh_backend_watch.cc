// The SSH backend's watch: the hosts' connections, ready files, output and
// exits over SFTP, stopping the tasks, stderr tails and metrics
// (lib/launch/ssh/ssh_backend.h).
#include <filesystem>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/ssh/ssh_backend.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kLookEvery{200};

std::string SshSeconds(std::chrono::milliseconds ms) {
  return StrCat(static_cast<double>(ms.count()) / 1000.0, " s");
}

// How a remote task ended, as ExitInfo::Describe tells it.
ExitInfo SshExitInfo(const ExitRecord& e) {
  return {e.signal != 0 ? -1 : e.exit_code.value_or(-1), e.signal};
}

}  // namespace

std::chrono::milliseconds SshBackend::LookEvery() const { return kLookEvery; }

bool SshBackend::Reachable(size_t i) const { return tasks_[i].link->up(); }

std::string SshBackend::LocalExitFile(size_t i) const {
  const TaskPlan& t = plan_->tasks[i];
  return (fs::path(plan_->run_dir) / TaskDirName(t.role, t.index) / kExitFile)
      .string();
}

void SshBackend::PumpOutput(size_t i, bool flush) {
  Task& t = tasks_[i];
  if (!events_->WantsOutput() || !t.link->up()) return;
  for (int s = 0; s < 2; ++s) {
    t.tails[s]->Poll(
        [&](std::string_view line) {
          events_->Output(i, s == 0 ? Stream::kStdout : Stream::kStderr, line);
        },
        flush);
  }
}

Status SshBackend::Look() {
  Status first;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (!t.started || t.exit || !t.link->up()) continue;
    if (Status s = LookReady(i); !s.ok()) return s;
    if (!t.link->up()) continue;
    PumpOutput(i, false);
    if (Status s = LookExit(i); !s.ok()) return s;
  }
  return OkStatus();
}

Status SshBackend::LookReady(size_t i) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  if (t.ready) return OkStatus();
  StatusOr<std::optional<std::string>> ready =
      t.host->ReadAt(plan.ready_file, 0, 256);
  if (!ready.ok()) {
    if (Dropped(*t.link, ready.status())) return OkStatus();
    return Annotate(ready.status(), StrCat("watching ", plan.name()));
  }
  if (!ready->has_value() || (*ready)->empty()) return OkStatus();
  // Written without a newline: taken as it is.
  std::string address = **ready;
  while (!address.empty() && address.back() == '\n') address.pop_back();
  t.ready = true;
  events_->Ready(i, address);
  return OkStatus();
}

Status SshBackend::LookExit(size_t i) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  StatusOr<std::optional<std::string>> exit =
      t.host->ReadAt(plan.exit_file, 0, 64 << 10);
  if (!exit.ok()) {
    if (Dropped(*t.link, exit.status())) return OkStatus();
    return Annotate(exit.status(), StrCat("watching ", plan.name()));
  }
  if (exit->has_value() && !(*exit)->empty()) TakeExit(i, **exit);
  return OkStatus();
}

void SshBackend::TakeExit(size_t i, const std::string& data) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  const std::string local = LocalExitFile(i);
  if (!WriteFileAtomically(local, data).ok()) return;
  StatusOr<std::optional<ExitRecord>> record = ReadExitRecord(local);
  if (!record.ok() || !record->has_value()) return;
  PumpOutput(i, true);
  t.exit = **record;
  if (t.exit->state == TaskState::kFailed && events_->EndsAreStops()) {
    // Ended while the launcher stops the tasks, before its own signal
    // reached it (an allreduce rank stops with the chief that was
    // signalled first): stopped, as on the local backend.
    t.exit->state = TaskState::kStopped;
    (void)WriteExitRecord(local, *t.exit);
  }
  const ExitRecord& e = *t.exit;
  TaskEnd end;
  end.state = e.state;
  end.exit_code = e.exit_code;
  end.signal = e.signal;
  end.how = StrCat("on ", plan.host, " ", TaskStateName(e.state),
                   e.exit_code ? StrCat(" (exit ", *e.exit_code, ")") : "");
  end.how_brief = StrCat("on ", plan.host, " ", TaskStateName(e.state));
  end.restart_how = StrCat(SshExitInfo(e).Describe(), " on ", plan.host);
  end.quote_signalled = true;
  events_->Ended(i, std::move(end));
  Note(StrCat(plan.name(), " on ", plan.host, " ", TaskStateName(e.state),
              e.exit_code ? StrCat(" (", *e.exit_code, ")") : std::string()));
}

bool SshBackend::Dropped(HostLink& link, const Status& error) {
  const bool was_up = link.up();
  if (!link.Dropped(error)) return false;
  if (was_up) NoteDrop(link);
  return true;
}

void SshBackend::NoteDrop(const HostLink& link) const {
  Note(StrCat("lost the connection to ", link.name(), " (",
              Message(link.last_error()), "); reconnecting for up to ",
              plan_->ssh.reconnect_timeout, " s while its tasks run on"));
}

Status SshBackend::Tend() {
  for (const std::unique_ptr<HostLink>& link : links_) {
    const HostLink::State before = link->state();
    const HostLink::State after = link->Tick();
    if (before == HostLink::State::kUp && after != HostLink::State::kUp) {
      NoteDrop(*link);
    }
    if (before != HostLink::State::kUp && after == HostLink::State::kUp) {
      Note(StrCat("reconnected to ", link->name(), " after ",
                  link->attempts() + 1, " attempt",
                  link->attempts() == 0 ? "" : "s",
                  "; watching its tasks again"));
    }
    if (after == HostLink::State::kLost) {
      return UnavailableError(
          StrCat(Message(link->LostError()),
                 "; stopped the tasks on the other hosts (those on ",
                 link->name(), " may still run there)"));
    }
  }
  return OkStatus();
}

Status SshBackend::StopRunning() {
  // Every task that has not exited gets SIGTERM: the workers first, the
  // parameter servers once the workers are gone or half of grace has
  // passed (the chief may need them to save a checkpoint); SIGKILL to
  // what is left after grace.
  enum Wave { kWorkers, kParameterServers, kKill };
  auto in_wave = [this](size_t i, Wave wave) {
    return wave == kKill || IsParameterServer(plan_->tasks[i].name()) ==
                                (wave == kParameterServers);
  };
  auto running = [&](RemoteHost* host, Wave wave) {
    std::vector<const TaskPlan*> out;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      const Task& t = tasks_[i];
      if (t.host == host && t.started && !t.exit && in_wave(i, wave)) {
        out.push_back(&plan_->tasks[i]);
      }
    }
    return out;
  };
  // Only the hosts still reached count: the tasks on a lost one are
  // recorded as lost at the end.
  auto any_running = [&](Wave wave) {
    for (size_t i = 0; i < tasks_.size(); ++i) {
      const Task& t = tasks_[i];
      if (t.started && !t.exit && t.link->up() && in_wave(i, wave)) {
        return true;
      }
    }
    return false;
  };
  // A host being reconnected gets one more try, so that its tasks are
  // stopped too.
  for (const std::unique_ptr<HostLink>& link : links_) {
    if (link->state() == HostLink::State::kReconnecting && link->AttemptNow()) {
      Note(StrCat("reconnected to ", link->name()));
    }
  }
  Status first;
  const auto start = Clock::now();
  for (Wave wave : {kWorkers, kParameterServers, kKill}) {
    if (!any_running(kKill)) break;
    for (size_t h = 0; h < hosts_.size(); ++h) {
      const std::unique_ptr<RemoteHost>& host = hosts_[h];
      if (host == nullptr || !links_[h]->up()) continue;
      std::vector<const TaskPlan*> tasks = running(host.get(), wave);
      if (tasks.empty()) continue;
      StatusOr<std::vector<std::string>> signalled =
          host->SignalTasks(*plan_, tasks, /*kill=*/wave == kKill);
      if (!signalled.ok()) {
        links_[h]->Dropped(signalled.status());
        Note(StrCat("warning: ", Message(signalled.status())));
      } else if (wave == kKill) {
        for (const std::string& name : *signalled) {
          Note(StrCat(name, " did not stop within ", SshSeconds(options_.grace),
                      "; killed"));
        }
      }
    }
    const auto until = wave == kWorkers ? start + options_.grace / 2
                       : wave == kParameterServers
                           ? start + options_.grace
                           : Clock::now() + std::chrono::milliseconds(5000);
    // After the workers' wave, every task still there counts.
    for (;;) {
      Status looked = Look();
      if (first.ok()) first = looked;
      if (!any_running(wave == kWorkers ? kWorkers : kKill) ||
          Clock::now() >= until) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return first;
}

void SshBackend::RecordLost() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.exit || !t.started) continue;
    // Gone without a word (its host unreachable): recorded as lost.
    ExitRecord e;
    e.task = plan_->tasks[i].name();
    e.state = TaskState::kLost;
    e.finished_ms = NowMs();
    (void)WriteExitRecord(LocalExitFile(i), e);
    t.exit = e;
    TaskEnd end;
    end.state = e.state;
    end.how = StrCat("on ", plan_->tasks[i].host, " lost");
    end.how_brief = end.how;
    end.restart_how = StrCat("lost on ", plan_->tasks[i].host);
    end.quote_signalled = true;
    events_->Ended(i, std::move(end));
  }
}

Status SshBackend::StopTasks(bool final) {
  const Status watched = StopRunning();
  if (final) {
    RecordLost();
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].started) PumpOutput(i, true);
    }
    return watched;
  }
  if (!watched.ok()) return watched;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].started && !tasks_[i].exit) {
      const TaskPlan& t = plan_->tasks[i];
      return UnavailableError(StrCat("task ", t.name(), " on ", t.host,
                                     " did not stop before the restart"));
    }
  }
  return OkStatus();
}

std::string SshBackend::StderrTail(size_t i) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  if (!t.link->up()) {
    return StrCat(" (its stderr, ", plan.host, ":", plan.stderr_file,
                  ", cannot be read: the host is unreachable)");
  }
  // Only the last 64 KiB count; a long log is read through to its end.
  constexpr size_t kWindow = 64 << 10;
  std::string window;
  bool cut = false;
  for (uint64_t offset = 0;;) {
    StatusOr<std::optional<std::string>> data =
        t.host->ReadAt(plan.stderr_file, offset, kWindow);
    if (!data.ok() || !data->has_value() || (*data)->empty()) break;
    offset += (*data)->size();
    window += **data;
    if (window.size() > kWindow) {
      window.erase(0, window.size() - kWindow);
      cut = true;
    }
    if ((*data)->size() < kWindow) break;
  }
  const std::vector<std::string> lines =
      LastLinesOf(window, options_.failure_lines, cut);
  if (lines.empty()) {
    return StrCat(" (its stderr, ", plan.host, ":", plan.stderr_file,
                  ", is empty)");
  }
  std::string out =
      StrCat("; the last lines of ", plan.host, ":", plan.stderr_file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

std::string SshBackend::ChiefFailed(size_t i, const TaskEnd& end) {
  const TaskPlan& t = plan_->tasks[i];
  return StrCat("the chief (", t.name(), " on ", t.host,
                ") exited with status ", end.exit_code.value_or(-1));
}

std::string SshBackend::NotReady(size_t i) const {
  const TaskPlan& t = plan_->tasks[i];
  return StrCat("task ", t.name(), " on ", t.host,
                " did not write its ready file");
}

void SshBackend::FetchMetrics() {
  if (plan_->metrics_out.empty()) return;
  const size_t c = static_cast<size_t>(plan_->ps);
  Task& chief = tasks_[c];
  if (!chief.started || chief.host == nullptr || !chief.link->up()) return;
  const std::string remote = StrCat(plan_->tasks[c].work_dir, "/runs/",
                                    plan_->run_id, "/", kRemoteMetricsFile);
  StatusOr<std::optional<std::string>> data =
      chief.host->ReadAt(remote, 0, 16 << 20);
  if (!data.ok() || !data->has_value()) return;
  Status s = WriteFileAtomically(plan_->metrics_out, **data);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
}

}  // namespace dtf::launch
