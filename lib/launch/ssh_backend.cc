#include "lib/launch/ssh_backend.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <map>
#include <thread>

#include "lib/base/build_config.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/data_preflight.h"
#include "lib/launch/env_cache.h"
#include "lib/launch/pack/elf_deps.h"
#include "lib/launch/pack/elf_file.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/pack/pack_job.h"
#include "lib/launch/process.h"
#include "lib/launch/restart_policy.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/status_client.h"
#include "lib/rpc/credentials.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Room beyond the archives for logs, checkpoints and exports.
constexpr uint64_t kSpareBytes = uint64_t{256} << 20;
constexpr std::chrono::milliseconds kLookEvery{200};

std::string Seconds(std::chrono::milliseconds ms) {
  return StrCat(static_cast<double>(ms.count()) / 1000.0, " s");
}

std::string MachineArch() {
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.machine) : std::string();
}

struct Packed {
  ShippedArchive env;
  ShippedArchive job;
  std::string glibc;
  std::string job_entry;
  uint64_t unpacked_bytes = 0;
  std::string note;  // why a cached runtime was not used; "" when it was
  pack::PackResult job_archive;
};

// The archives, packed beside the job (.dtf/pack); reproducible, so an
// unchanged binary and job give the same ids every time.
StatusOr<Packed> PackArchives(const PlanRequest& r,
                              const std::string& search_path) {
  const std::string out =
      (fs::path(r.job).parent_path() / ".dtf" / "pack").string();
  std::string note;
  DTF_ASSIGN_OR_RETURN(const pack::PackResult e,
                       PackEnvCached(out, search_path, &note));
  // The job is small: packed every time.
  DTF_ASSIGN_OR_RETURN(const pack::PackResult j, PackJobArchive(r));
  Packed p;
  p.env = {e.archive.sha256.substr(0, 16), e.archive.path, e.archive.size};
  p.job = {j.archive.sha256.substr(0, 16), j.archive.path, j.archive.size};
  p.glibc = e.manifest.glibc;
  p.job_entry = j.manifest.entry;
  for (const auto* m : {&e.manifest, &j.manifest}) {
    for (const pack::ManifestFile& f : m->files) p.unpacked_bytes += f.size;
  }
  p.unpacked_bytes += j.archive.size;
  p.note = std::move(note);
  p.job_archive = j;
  return p;
}

// Runs `fn(i)` for every i in [0, n) on threads of their own.
template <typename Fn>
void ForEachParallel(size_t n, Fn fn) {
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&fn, i] { fn(i); });
  for (std::thread& t : threads) t.join();
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) StrAppend(&out, "\n  ", l);
  return out;
}

// How a remote task ended, as ExitInfo::Describe tells it.
ExitInfo SshExitInfo(const ExitRecord& e) {
  return {e.signal != 0 ? -1 : e.exit_code.value_or(-1), e.signal};
}

}  // namespace

std::unique_ptr<LineTail> RemoteTail(RemoteHost* host, std::string path) {
  return std::make_unique<LineTail>(path,
                                    [host, path](uint64_t offset, size_t max) {
                                      return host->ReadAt(path, offset, max);
                                    });
}

StatusOr<std::unique_ptr<Run>> StartRun(PlanRequest request,
                                        RunOptions options) {
  if (request.profile.backend == BackendKind::kSsh) {
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<SshRun> run,
                         SshRun::Start(std::move(request), options));
    return std::unique_ptr<Run>(std::move(run));
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<LocalRun> run,
                       LocalRun::Start(std::move(request), options));
  return std::unique_ptr<Run>(std::move(run));
}

SshRun::SshRun(Plan plan, RunOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {}

SshRun::~SshRun() {
  if (!over_) Stop(CancelledError("the launcher ended"));
}

void SshRun::Note(std::string_view text) const {
  if (options_.on_note) options_.on_note(text);
}

void SshRun::WriteRecord() {
  Status s = WriteRunRecord(plan_.run_dir, record_);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
}

bool SshRun::StopRequested() const {
  std::error_code ec;
  return fs::exists(fs::path(plan_.run_dir) / kStopFile, ec);
}

StatusOr<std::unique_ptr<SshRun>> SshRun::Start(PlanRequest request,
                                                RunOptions options) {
  // Nothing is written on any host until every host has passed.
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(const Plan draft, MakePlan(request));
  // The hosts are checked while the archives are packed.
  DTF_ASSIGN_OR_RETURN(PreflightOptions pre, RuntimeNeeds());
  pre.accept_new_host_keys = options.ssh.accept_new_host_keys;
  StatusOr<Packed> packing = InternalError("not packed");
  std::thread packer(
      [&] { packing = PackArchives(request, options.ssh.search_path); });
  PreflightResult checked = Preflight(draft, pre);
  packer.join();
  if (packing.ok() && !packing->note.empty() && options.on_note) {
    options.on_note(packing->note);
  }
  if (packing.ok()) {
    DTF_RETURN_IF_ERROR(CheckJobData(draft, packing->job_archive, &checked));
  }
  if (options.ssh.on_preflight) {
    options.ssh.on_preflight(PreflightTable(checked));
  }
  DTF_RETURN_IF_ERROR(checked.ToStatus());
  DTF_RETURN_IF_ERROR(packing.status());
  const Packed& packed = *packing;
  // A packed library may need a newer glibc than the binary itself.
  for (size_t h = 0; h < checked.rows.size(); ++h) {
    const HostRow& row = checked.rows[h];
    if (!packed.glibc.empty() &&
        pack::CompareVersions(row.facts.glibc, packed.glibc) < 0) {
      return FailedPreconditionError(
          StrCat("preflight: ", row.host, ": glibc ", row.facts.glibc,
                 ", the packed runtime needs ", packed.glibc));
    }
  }

  if (draft.base_port == 0) request.ports = ChoosePorts(draft, checked);
  request.env_id = packed.env.id;
  request.job_id = packed.job.id;
  request.job_entry = packed.job_entry;
  const std::string runs_dir = fs::path(draft.run_dir).parent_path().string();
  if (request.resume) {
    DTF_RETURN_IF_ERROR(ReopenRunDir(runs_dir, wanted_id));
    request.run_id = wanted_id;
  } else {
    DTF_ASSIGN_OR_RETURN(request.run_id, CreateRunDir(runs_dir, wanted_id));
  }
  DTF_ASSIGN_OR_RETURN(Plan plan, MakePlan(request));

  std::unique_ptr<SshRun> run(new SshRun(std::move(plan), options));
  const Plan& p = run->plan_;
  run->hosts_ = std::move(checked.hosts);
  ReconnectPolicy reconnect;
  reconnect.timeout = std::chrono::seconds(p.ssh.reconnect_timeout);
  for (size_t h = 0; h < run->hosts_.size(); ++h) {
    run->links_.push_back(std::make_unique<HostLink>(
        run->hosts_[h].get(), p.hosts[h].host, reconnect));
  }
  run->shipped_.resize(run->hosts_.size());
  run->record_.run_id = p.run_id;
  run->record_.started_ms = NowMs();
  run->record_.supervisor.pid = ::getpid();
  run->record_.supervisor.start_ticks =
      ProcessStartTicks(::getpid()).value_or(0);
  run->record_.detached = options.detached;
  run->started_ = Clock::now();
  for (const TaskPlan& t : p.tasks) {
    Task task;
    task.plan = &t;
    for (size_t h = 0; h < p.hosts.size(); ++h) {
      if (p.hosts[h].host == t.host) {
        task.host = run->hosts_[h].get();
        task.link = run->links_[h].get();
      }
    }
    run->tasks_.push_back(std::move(task));
    TaskRecord tr;
    tr.task = t.name();
    run->record_.tasks.push_back(std::move(tr));
  }
  auto fail = [&](const Status& status) {
    run->failure_ = status;
    run->stopping_ = true;
    run->Finish();
    return status;
  };

  // The local run directory, as for a local run: the plan, the secret, a
  // directory per task (exit.json is copied there).
  DTF_RETURN_IF_ERROR(WriteNewSecret(p.secret_file));
  DTF_ASSIGN_OR_RETURN(const std::string secret,
                       rpc::ReadSecretFile(p.secret_file));
  RunTls tls;
  if (p.tls) {
    DTF_ASSIGN_OR_RETURN(tls, MakeRunTls(p));
    DTF_RETURN_IF_ERROR(WriteRunTls(tls, TlsDirOf(p.run_dir)));
  }
  for (const TaskPlan& t : p.tasks) {
    const std::string local =
        (fs::path(p.run_dir) / TaskDirName(t.role, t.index)).string();
    std::error_code ec;
    fs::create_directories(local, ec);
    if (ec) return ErrnoToStatus(ec.value(), local);
  }
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      (fs::path(p.run_dir) / kPlanFile).string(), PlanToJson(p)));
  run->WriteRecord();

  // Every host at once: ship what it lacks, then its run directory.
  std::vector<Status> results(run->hosts_.size());
  ForEachParallel(run->hosts_.size(), [&](size_t h) {
    RemoteHost& host = *run->hosts_[h];
    StatusOr<ShipReport> shipped = host.Ship(packed.env, packed.job);
    if (!shipped.ok()) {
      results[h] = shipped.status();
      return;
    }
    run->shipped_[h] = *shipped;
    std::vector<const TaskPlan*> mine;
    for (const TaskPlan& t : p.tasks) {
      if (t.host == p.hosts[h].host) mine.push_back(&t);
    }
    results[h] = host.PrepareRun(
        p, secret, mine,
        p.tls ? HostTlsFiles(tls, mine) : std::vector<TlsFile>{});
  });
  std::vector<std::string> errors;
  for (size_t h = 0; h < results.size(); ++h) {
    if (!results[h].ok()) {
      errors.push_back(StrCat(p.hosts[h].host, ": ", Message(results[h])));
    } else {
      const ShipReport& s = run->shipped_[h];
      run->Note(
          StrCat(p.hosts[h].host, ": ",
                 s.env_uploaded || s.job_uploaded
                     ? StrCat("shipped ", s.env_uploaded ? "the runtime" : "",
                              s.env_uploaded && s.job_uploaded ? " and " : "",
                              s.job_uploaded ? "the job" : "", " (",
                              s.bytes / 1024, " KiB)")
                     : std::string("runtime and job already there")));
    }
  }
  if (!errors.empty()) {
    return fail(UnavailableError(StrCat("shipping failed on ", errors.size(),
                                        " host", errors.size() == 1 ? "" : "s",
                                        ":", JoinLines(errors))));
  }
  // Parameter servers first, then workers; within each, every host at once
  // (a host's own tasks one after another on its session).
  for (Role role : {Role::kPs, Role::kWorker}) {
    // A task after one that failed on the same host is not tried.
    std::vector<StatusOr<ProcessId>> ids(p.tasks.size(),
                                         CancelledError("not tried"));
    ForEachParallel(run->hosts_.size(), [&](size_t h) {
      for (size_t i = 0; i < p.tasks.size(); ++i) {
        Task& t = run->tasks_[i];
        if (t.plan->role != role || t.host != run->hosts_[h].get()) continue;
        ids[i] = t.host->StartTask(p, *t.plan);
        if (!ids[i].ok()) return;
      }
    });
    Status first_error;
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      Task& t = run->tasks_[i];
      if (t.plan->role != role) continue;
      if (!ids[i].ok()) {
        if (first_error.ok() &&
            ids[i].status().code() != StatusCode::kCancelled) {
          first_error = Annotate(ids[i].status(),
                                 StrCat("task ", t.plan->name(), " on ",
                                        t.plan->host, " failed to start"));
        }
        continue;
      }
      t.process = *ids[i];
      t.started = true;
      t.tails[0] = RemoteTail(t.host, t.plan->stdout_file);
      t.tails[1] = RemoteTail(t.host, t.plan->stderr_file);
      run->record_.tasks[i].process = *ids[i];
      run->Note(StrCat(t.plan->name(), " started on ", t.plan->host, " (pid ",
                       ids[i]->pid, ")"));
    }
    // Every task that did start is stopped again by fail().
    if (!first_error.ok()) return fail(first_error);
  }
  run->WriteRecord();
  return run;
}

void SshRun::PumpOutput(Task& t, bool flush) {
  if (!options_.on_output || !t.link->up()) return;
  for (int s = 0; s < 2; ++s) {
    t.tails[s]->Poll(
        [&](std::string_view line) {
          options_.on_output(*t.plan,
                             s == 0 ? Stream::kStdout : Stream::kStderr, line);
        },
        flush);
  }
}

std::vector<size_t> SshRun::Look(bool flush) {
  std::vector<size_t> exited;
  bool changed = false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (!t.started || t.exit || !t.link->up()) continue;
    if (!t.ready) {
      StatusOr<std::optional<std::string>> ready =
          t.host->ReadAt(t.plan->ready_file, 0, 256);
      if (!ready.ok()) {
        if (Dropped(*t.link, ready.status())) continue;
        Fail(Annotate(ready.status(), StrCat("watching ", t.plan->name())));
        return exited;
      }
      if (ready->has_value() && !(*ready)->empty() &&
          (*ready)->find('\n') != std::string::npos) {
        std::string address = **ready;
        while (!address.empty() && (address.back() == '\n')) address.pop_back();
        t.ready = true;
        record_.tasks[i].address = address;
        record_.tasks[i].state = "running";
        changed = true;
        Note(StrCat(t.plan->name(), " ready at ", address));
      } else if (ready->has_value() && !(*ready)->empty()) {
        // Written without a newline: take it as it is.
        t.ready = true;
        record_.tasks[i].address = **ready;
        record_.tasks[i].state = "running";
        changed = true;
        Note(StrCat(t.plan->name(), " ready at ", **ready));
      }
    }
    PumpOutput(t, flush);
    StatusOr<std::optional<std::string>> exit =
        t.host->ReadAt(t.plan->exit_file, 0, 64 << 10);
    if (!exit.ok()) {
      if (Dropped(*t.link, exit.status())) continue;
      Fail(Annotate(exit.status(), StrCat("watching ", t.plan->name())));
      return exited;
    }
    if (!exit->has_value() || (*exit)->empty()) continue;
    const std::string local =
        (fs::path(plan_.run_dir) / TaskDirName(t.plan->role, t.plan->index) /
         kExitFile)
            .string();
    if (!WriteFileAtomically(local, **exit).ok()) continue;
    StatusOr<std::optional<ExitRecord>> record = ReadExitRecord(local);
    if (!record.ok() || !record->has_value()) continue;
    PumpOutput(t, true);
    t.exit = **record;
    record_.tasks[i].state = t.exit->state;
    changed = true;
    exited.push_back(i);
    Note(StrCat(t.plan->name(), " on ", t.plan->host, " ", t.exit->state,
                t.exit->exit_code ? StrCat(" (", *t.exit->exit_code, ")")
                                  : std::string()));
  }
  if (changed) WriteRecord();
  return exited;
}

bool SshRun::Dropped(HostLink& link, const Status& error) {
  const bool was_up = link.up();
  if (!link.Dropped(error)) return false;
  if (was_up) NoteDrop(link);
  return true;
}

void SshRun::NoteDrop(const HostLink& link) const {
  Note(StrCat("lost the connection to ", link.name(), " (",
              Message(link.last_error()), "); reconnecting for up to ",
              plan_.ssh.reconnect_timeout, " s while its tasks run on"));
}

bool SshRun::TendLinks() {
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
      Fail(UnavailableError(
          StrCat(Message(link->LostError()),
                 "; stopped the tasks on the other hosts (those on ",
                 link->name(), " may still run there)")));
      return false;
    }
  }
  return true;
}

bool SshRun::Restart(size_t i) {
  const Task& t = tasks_[i];
  const ExitInfo how = SshExitInfo(*t.exit);
  Note(StrCat(
      RestartNote(plan_, *t.plan, StrCat(how.Describe(), " on ", t.plan->host),
                  t.restarts),
      how.signal == 0 ? StderrTail(i) : std::string()));
  return Respawn(i);
}

bool SshRun::RestartAll(size_t failed) {
  const Task& f = tasks_[failed];
  const ExitInfo how = SshExitInfo(*f.exit);
  Note(StrCat(
      RestartAllNote(plan_, *f.plan,
                     StrCat(how.Describe(), " on ", f.plan->host), f.restarts),
      how.signal == 0 ? StderrTail(failed) : std::string()));
  // The ends of the tasks stopped here are the launcher's doing: Poll does
  // not look at them.
  StopRunning();
  if (over_ || stopping_) return false;  // an SSH error ended the run
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].started && !tasks_[i].exit) {
      Fail(UnavailableError(StrCat("task ", tasks_[i].plan->name(), " on ",
                                   tasks_[i].plan->host,
                                   " did not stop before the restart")));
      return false;
    }
  }
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!Respawn(i)) return false;
  }
  return true;
}

bool SshRun::Respawn(size_t i) {
  Task& t = tasks_[i];
  const TaskPlan& plan = *t.plan;
  std::error_code ec;
  fs::remove(
      fs::path(plan_.run_dir) / TaskDirName(plan.role, plan.index) / kExitFile,
      ec);
  StatusOr<ProcessId> id = t.host->StartTask(plan_, plan, /*restart=*/true);
  if (!id.ok()) {
    Fail(Annotate(id.status(), StrCat("task ", plan.name(), " on ", plan.host,
                                      " failed to start again")));
    return false;
  }
  ++t.restarts;
  t.restarted_at = Clock::now();
  t.process = *id;
  t.exit.reset();
  t.ready = false;
  record_.tasks[i].process = *id;
  record_.tasks[i].restarts = t.restarts;
  record_.tasks[i].state = "starting";
  WriteRecord();
  Note(StrCat(plan.name(), " started again on ", plan.host, " (pid ", id->pid,
              ")"));
  return true;
}

std::string SshRun::StderrTail(size_t i) {
  Task& t = tasks_[i];
  if (!t.link->up()) {
    return StrCat(" (its stderr, ", t.plan->host, ":", t.plan->stderr_file,
                  ", cannot be read: the host is unreachable)");
  }
  // Only the last 64 KiB count; a long log is read through to its end.
  constexpr size_t kWindow = 64 << 10;
  std::string window;
  bool cut = false;
  for (uint64_t offset = 0;;) {
    StatusOr<std::optional<std::string>> data =
        t.host->ReadAt(t.plan->stderr_file, offset, kWindow);
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
    return StrCat(" (its stderr, ", t.plan->host, ":", t.plan->stderr_file,
                  ", is empty)");
  }
  std::string out = StrCat("; the last lines of ", t.plan->host, ":",
                           t.plan->stderr_file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

void SshRun::StopRunning() {
  // Every task that has not exited gets SIGTERM: the workers first, the
  // parameter servers once the workers are gone or half of grace has
  // passed (the chief may need them to save a checkpoint); SIGKILL to
  // what is left after grace.
  enum Wave { kWorkers, kParameterServers, kKill };
  auto in_wave = [](const Task& t, Wave wave) {
    return wave == kKill ||
           IsParameterServer(t.plan->name()) == (wave == kParameterServers);
  };
  auto running = [&](RemoteHost* host, Wave wave) {
    std::vector<const TaskPlan*> out;
    for (const Task& t : tasks_) {
      if (t.host == host && t.started && !t.exit && in_wave(t, wave)) {
        out.push_back(t.plan);
      }
    }
    return out;
  };
  // Only the hosts still reached count: the tasks on a lost one are
  // recorded as lost below.
  auto any_running = [&](Wave wave) {
    for (const Task& t : tasks_) {
      if (t.started && !t.exit && t.link->up() && in_wave(t, wave)) {
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
  const auto start = Clock::now();
  for (Wave wave : {kWorkers, kParameterServers, kKill}) {
    if (!any_running(kKill)) break;
    for (size_t h = 0; h < hosts_.size(); ++h) {
      const std::unique_ptr<RemoteHost>& host = hosts_[h];
      if (host == nullptr || !links_[h]->up()) continue;
      std::vector<const TaskPlan*> tasks = running(host.get(), wave);
      if (tasks.empty()) continue;
      StatusOr<std::vector<std::string>> signalled =
          host->SignalTasks(plan_, tasks, /*kill=*/wave == kKill);
      if (!signalled.ok()) {
        links_[h]->Dropped(signalled.status());
        Note(StrCat("warning: ", Message(signalled.status())));
      } else if (wave == kKill) {
        for (const std::string& name : *signalled) {
          Note(StrCat(name, " did not stop within ", Seconds(options_.grace),
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
      Look(false);
      if (!any_running(wave == kWorkers ? kWorkers : kKill) ||
          Clock::now() >= until) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void SshRun::Finish() {
  bool running = false;
  for (const Task& t : tasks_) {
    running = running || (t.started && !t.exit && t.link->up());
  }
  if (running && stopping_) Note("stopping every task");
  StopRunning();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.exit || !t.started) continue;
    // Gone without a word (its host unreachable): recorded as lost.
    ExitRecord e;
    e.task = t.plan->name();
    e.state = "lost";
    e.finished_ms = NowMs();
    (void)WriteExitRecord((fs::path(plan_.run_dir) /
                           TaskDirName(t.plan->role, t.plan->index) / kExitFile)
                              .string(),
                          e);
    t.exit = e;
    record_.tasks[i].state = "lost";
  }
  for (Task& t : tasks_) {
    if (t.started) PumpOutput(t, true);
  }
  FetchMetrics();
  const RunOutcome o = outcome();
  record_.state = o.state;
  record_.exit_code = o.exit_code;
  record_.message = std::string(Message(o.status));
  record_.ended_ms = NowMs();
  WriteRecord();
  over_ = true;
}

void SshRun::FetchMetrics() {
  if (plan_.metrics_out.empty()) return;
  Task& chief = tasks_[static_cast<size_t>(plan_.ps)];
  if (!chief.started || chief.host == nullptr || !chief.link->up()) return;
  const std::string remote = StrCat(chief.plan->work_dir, "/runs/",
                                    plan_.run_id, "/", kRemoteMetricsFile);
  StatusOr<std::optional<std::string>> data =
      chief.host->ReadAt(remote, 0, 16 << 20);
  if (!data.ok() || !data->has_value()) return;
  Status s = WriteFileAtomically(plan_.metrics_out, **data);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
}

RunOutcome SshRun::outcome() const {
  RunOutcome o;
  const Task& chief = tasks_[static_cast<size_t>(plan_.ps)];
  if (std::optional<RunOutcome> failed = FailureOutcome()) return *failed;
  if (!chief.exit || !chief.exit->exit_code) {
    o.status = InternalError("the run ended before its chief");
    o.state = "failed";
    return o;
  }
  o.exit_code = *chief.exit->exit_code;
  if (o.exit_code == 0) {
    o.state = "succeeded";
    return o;
  }
  o.state = "failed";
  o.status = absl::AbortedError(
      ToAbsl(StrCat("the chief (", chief.plan->name(), " on ", chief.plan->host,
                    ") exited with status ", *o.exit_code)));
  return o;
}

bool SshRun::Poll() {
  if (over_) return true;
  if (options_.cancel != nullptr && options_.cancel->load()) {
    Stop(CancelledError(
        StrCat("interrupted; stopped every task of run ", plan_.run_id)));
    return true;
  }
  // Each look is a few SFTP requests per task: at most every kLookEvery,
  // however often the caller polls.
  const auto now = Clock::now();
  if (now - last_look_ < kLookEvery) return false;
  last_look_ = now;
  if (StopRequested() && !linger_until_) {
    Stop(CancelledError(
        StrCat("run ", plan_.run_id, " was stopped (dtf stop)")));
    return true;
  }
  if (!TendLinks()) return true;
  const size_t chief = static_cast<size_t>(plan_.ps);
  if (!linger_until_ && DeadlinePassed(options_, started_)) return true;
  for (size_t i : Look(false)) {
    if (over_) return true;
    const Task& t = tasks_[i];
    const bool clean = t.exit->state == "exited";
    const std::string how = StrCat(
        "on ", t.plan->host, " ", t.exit->state,
        t.exit->exit_code ? StrCat(" (exit ", *t.exit->exit_code, ")") : "");
    switch (OnTaskEnded(plan_, *t.plan, clean, linger_until_.has_value(),
                        t.restarts)) {
      case TaskEndAction::kNone:
        continue;
      case TaskEndAction::kChiefExited:
        linger_until_ = Clock::now() + options_.grace;
        continue;
      case TaskEndAction::kRestart:
        if (Restart(i)) continue;
        return true;
      case TaskEndAction::kRestartAll:
        // Every task has started again: the other ends of this look are
        // those of tasks now restarted.
        return !RestartAll(i);
      case TaskEndAction::kGoOn:
        Note(StrCat("task ", t.plan->name(), " on ", t.plan->host, " ",
                    t.exit->state, "; the run goes on without it",
                    StderrTail(i)));
        continue;
      case TaskEndAction::kFailAllreduce:
        Fail(absl::AbortedError(ToAbsl(
            StrCat(AllreduceWorkerLost(plan_, *t.plan, how), StderrTail(i)))));
        return true;
      case TaskEndAction::kFail:
        Fail(absl::AbortedError(ToAbsl(StrCat(
            "task ", t.plan->name(), " ", how,
            " before the run ended; stopped the other tasks", StderrTail(i)))));
        return true;
    }
  }
  if (over_) return true;
  if (tasks_[chief].exit) {
    bool others = false;
    for (const Task& t : tasks_) others = others || !t.exit;
    if (!others || Clock::now() >= *linger_until_) {
      if (others) {
        Note(StrCat("the chief exited ", Seconds(options_.grace),
                    " ago; stopping the tasks still running"));
        stopping_ = true;
      }
      Finish();
      return true;
    }
    return false;
  }
  // Counted from the run's start, or from a restarted task's restart.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].ready || tasks_[i].exit || !tasks_[i].link->up()) continue;
    if (Clock::now() - std::max(started_, tasks_[i].restarted_at) >
        options_.start_timeout) {
      Fail(DeadlineExceededError(
          StrCat("task ", tasks_[i].plan->name(), " on ", tasks_[i].plan->host,
                 " did not write its ready file within ",
                 Seconds(options_.start_timeout), "; stopped every task",
                 StderrTail(i))));
      return true;
    }
  }
  return false;
}

RunOutcome SshRun::Wait() {
  while (!Poll()) std::this_thread::sleep_for(kLookEvery);
  return outcome();
}

StatusOr<PreflightOptions> RuntimeNeeds() {
  PreflightOptions o;
  o.arch = MachineArch();
  DTF_ASSIGN_OR_RETURN(const std::string self, SelfExecutable());
  DTF_ASSIGN_OR_RETURN(const pack::ElfFile elf, pack::ReadElfFile(self));
  o.glibc = pack::GlibcVersionNeeded(elf);
  std::error_code ec;
  o.need_bytes = fs::file_size(self, ec) + kSpareBytes;
  DTF_ASSIGN_OR_RETURN(const std::vector<pack::ResolvedLibrary> libs,
                       pack::ResolveDependencies(self, pack::LibrarySearch{}));
  for (const pack::ResolvedLibrary& lib : libs) {
    o.need_bytes += fs::file_size(lib.path, ec);
  }
  return o;
}

StatusOr<std::unique_ptr<RemoteHost>> ConnectTaskHost(const Plan& plan,
                                                      const TaskPlan& task) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ssh::Session> session,
                       ssh::Session::Connect(TargetFor(
                           plan, task.host, task.ssh_user, task.ssh_port)));
  return std::make_unique<RemoteHost>(std::move(session), task.work_dir);
}

}  // namespace dtf::launch
