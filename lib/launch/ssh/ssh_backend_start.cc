// The SSH backend's start: packing, the hosts' preflight, shipping and
// starting the tasks (lib/launch/ssh/ssh_backend.h).
#include <sys/utsname.h>

#include <filesystem>
#include <thread>

#include "lib/base/bounded_read.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/elf_deps.h"
#include "lib/launch/pack/elf_file.h"
#include "lib/launch/pack/env_cache.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/pack/pack_job.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/ssh/data_preflight.h"
#include "lib/launch/ssh/ssh_backend.h"
#include "lib/launch/ssh/ssh_plan.h"
#include "lib/rpc/credentials.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

// Room beyond the archives for logs, checkpoints and exports.
constexpr uint64_t kSpareBytes = uint64_t{256} << 20;

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
      !r.batch_files.pack_dir.empty()
          ? r.batch_files.pack_dir
          : (fs::path(r.job).parent_path() / ".dtf" / "pack").string();
  std::string note;
  DTF_ASSIGN_OR_RETURN(const pack::PackResult e,
                       pack::PackEnvCached(out, search_path, &note));
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

std::string JoinErrorLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) StrAppend(&out, "\n  ", l);
  return out;
}

}  // namespace

std::unique_ptr<LineTail> RemoteTail(RemoteHost* host, std::string path) {
  return std::make_unique<LineTail>(path,
                                    [host, path](uint64_t offset, size_t max) {
                                      return host->ReadAt(path, offset, max);
                                    });
}

SshBackend::SshBackend(RunOptions options) : options_(std::move(options)) {}

SshBackend::~SshBackend() = default;

void SshBackend::Note(std::string_view text) const {
  if (events_ != nullptr) {
    events_->Note(text);
  } else if (options_.on_note) {
    options_.on_note(text);
  }
}

StatusOr<Plan> SshBackend::Place(PlanRequest request) {
  // Nothing is written on any host until every host has passed.
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(const Plan draft,
                       MakePlanWith(request, ssh::SshPlanHooks()));
  // The hosts are checked while the archives are packed.
  DTF_ASSIGN_OR_RETURN(PreflightOptions pre, RuntimeNeeds());
  pre.accept_new_host_keys = options_.ssh.accept_new_host_keys;
  StatusOr<Packed> packing = InternalError("not packed");
  std::thread packer(
      [&] { packing = PackArchives(request, options_.ssh.search_path); });
  PreflightResult checked = Preflight(draft, pre);
  packer.join();
  if (packing.ok() && !packing->note.empty()) Note(packing->note);
  if (packing.ok()) {
    DTF_RETURN_IF_ERROR(CheckJobData(draft, packing->job_archive, &checked,
                                     request.batch_files));
  }
  if (options_.ssh.on_preflight) {
    options_.ssh.on_preflight(PreflightTable(checked));
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
  DTF_ASSIGN_OR_RETURN(request.run_id,
                       ClaimRunDir(runs_dir, wanted_id, request.resume));
  env_ = packed.env;
  job_ = packed.job;
  hosts_ = std::move(checked.hosts);
  return MakePlanWith(request, ssh::SshPlanHooks());
}

void SshBackend::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  const Plan& p = *plan;
  ReconnectPolicy reconnect;
  reconnect.timeout = std::chrono::seconds(p.ssh.reconnect_timeout);
  for (size_t h = 0; h < hosts_.size(); ++h) {
    links_.push_back(std::make_unique<HostLink>(hosts_[h].get(),
                                                p.hosts[h].host, reconnect));
  }
  shipped_.resize(hosts_.size());
  tasks_.resize(p.tasks.size());
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    for (size_t h = 0; h < p.hosts.size() && h < hosts_.size(); ++h) {
      if (p.hosts[h].host == p.tasks[i].host) {
        tasks_[i].host = hosts_[h].get();
        tasks_[i].link = links_[h].get();
      }
    }
  }
}

Status SshBackend::Prepare(const RunTls* tls) {
  const Plan& p = *plan_;
  DTF_ASSIGN_OR_RETURN(const std::string secret,
                       rpc::ReadSecretFile(p.secret_file));
  std::string s3_credentials;
  if (!p.s3_file.empty()) {
    DTF_ASSIGN_OR_RETURN(s3_credentials,
                         ReadPrivateFile(p.s3_file, kMaxS3CredentialsBytes));
  }
  // Every host at once: ship what it lacks, then its run directory.
  std::vector<Status> results(hosts_.size());
  std::vector<Status> checks(hosts_.size());
  ForEachParallel(hosts_.size(), [&](size_t h) {
    RemoteHost& host = *hosts_[h];
    StatusOr<ShipReport> shipped = host.Ship(env_, job_);
    if (!shipped.ok()) {
      results[h] = shipped.status();
      return;
    }
    shipped_[h] = *shipped;
    std::vector<const TaskPlan*> mine;
    for (const TaskPlan& t : p.tasks) {
      if (t.host == p.hosts[h].host) mine.push_back(&t);
    }
    results[h] = host.PrepareRun(
        p, secret, mine,
        tls != nullptr ? HostTlsFiles(*tls, mine) : std::vector<TlsFile>{},
        s3_credentials);
    // The job's data in a bucket, as this host's tasks will read it.
    if (results[h].ok() && !p.s3_file.empty() && !mine.empty() && !p.batch) {
      checks[h] = host.CheckRemoteData(p, *mine.front());
    }
  });
  std::vector<std::string> errors;
  for (size_t h = 0; h < results.size(); ++h) {
    if (!results[h].ok()) {
      errors.push_back(StrCat(p.hosts[h].host, ": ", Message(results[h])));
      continue;
    }
    const ShipReport& s = shipped_[h];
    Note(StrCat(p.hosts[h].host, ": ",
                s.env_uploaded || s.job_uploaded
                    ? StrCat("shipped ", s.env_uploaded ? "the runtime" : "",
                             s.env_uploaded && s.job_uploaded ? " and " : "",
                             s.job_uploaded ? "the job" : "", " (",
                             s.bytes / 1024, " KiB)")
                    : std::string("runtime and job already there")));
  }
  if (!errors.empty()) {
    return UnavailableError(StrCat("shipping failed on ", errors.size(),
                                   " host", errors.size() == 1 ? "" : "s", ":",
                                   JoinErrorLines(errors)));
  }
  for (size_t h = 0; h < checks.size(); ++h) {
    if (!checks[h].ok()) errors.push_back(std::string(Message(checks[h])));
  }
  if (!errors.empty()) {
    return FailedPreconditionError(StrCat(
        "the job's data in its bucket failed the check on ", errors.size(),
        " host", errors.size() == 1 ? "" : "s", ":", JoinErrorLines(errors)));
  }
  if (!p.s3_file.empty()) {
    Note("every host lists and reads the job's data in its bucket");
  }
  return OkStatus();
}

std::vector<StatusOr<ProcessId>> SshBackend::StartTasks(Role role) {
  const Plan& p = *plan_;
  // Every host at once (a host's own tasks one after another on its
  // session); a task after one that failed on the same host is not tried.
  std::vector<StatusOr<ProcessId>> ids(p.tasks.size(),
                                       CancelledError("not tried"));
  ForEachParallel(hosts_.size(), [&](size_t h) {
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = tasks_[i];
      if (p.tasks[i].role != role || p.Reserved(p.tasks[i]) ||
          t.host != hosts_[h].get()) {
        continue;
      }
      ids[i] = t.host->StartTask(p, p.tasks[i]);
      if (!ids[i].ok()) return;
    }
  });
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const TaskPlan& plan = p.tasks[i];
    if (plan.role != role || p.Reserved(plan)) continue;
    if (!ids[i].ok()) {
      if (ids[i].status().code() != StatusCode::kCancelled) {
        ids[i] =
            Annotate(ids[i].status(), StrCat("task ", plan.name(), " on ",
                                             plan.host, " failed to start"));
      }
      continue;
    }
    Started(i, *ids[i]);
  }
  return ids;
}

void SshBackend::Started(size_t i, const ProcessId& id) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  t.process = id;
  t.started = true;
  t.tails[0] = RemoteTail(t.host, plan.stdout_file);
  t.tails[1] = RemoteTail(t.host, plan.stderr_file);
  Note(StrCat(plan.name(), " started on ", plan.host, " (pid ", id.pid, ")"));
}

StatusOr<ProcessId> SshBackend::StartReserved(size_t i) {
  const TaskPlan& plan = plan_->tasks[i];
  StatusOr<ProcessId> id = tasks_[i].host->StartTask(*plan_, plan);
  if (!id.ok()) {
    return Annotate(id.status(), StrCat("task ", plan.name(), " on ", plan.host,
                                        " failed to start"));
  }
  Started(i, *id);
  return *id;
}

StatusOr<ProcessId> SshBackend::StartAgain(size_t i, bool) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  std::error_code ec;
  fs::remove(LocalExitFile(i), ec);
  StatusOr<ProcessId> id = t.host->StartTask(*plan_, plan, /*restart=*/true);
  if (!id.ok()) {
    return Annotate(id.status(), StrCat("task ", plan.name(), " on ", plan.host,
                                        " failed to start again"));
  }
  t.exit.reset();
  t.ready = false;
  // A reserved slot never started (an allreduce run scaled up): its
  // output is followed from now on.
  if (!t.started) {
    Started(i, *id);
    return *id;
  }
  t.process = *id;
  Note(StrCat(plan.name(), " started again on ", plan.host, " (pid ", id->pid,
              ")"));
  return *id;
}

SshRun::SshRun(SshBackend* backend, RunOptions options)
    : Run(std::unique_ptr<Backend>(backend), std::move(options)),
      ssh_(backend) {}

StatusOr<std::unique_ptr<SshRun>> SshRun::Start(PlanRequest request,
                                                RunOptions options) {
  auto* backend = new SshBackend(options);
  std::unique_ptr<SshRun> run(new SshRun(backend, std::move(options)));
  DTF_RETURN_IF_ERROR(run->Begin(std::move(request)));
  return run;
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
