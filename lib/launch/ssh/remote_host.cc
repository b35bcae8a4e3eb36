#include "lib/launch/ssh/remote_host.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "lib/base/strings.h"
#include "lib/launch/pack/archive_reader.h"
#include "lib/launch/restart_policy.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/ssh/task_exec.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kCommandTimeout{60000};

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The probe: key=value lines. Only POSIX sh, uname, getconf, df, awk, date
// and /proc are assumed.
std::string ProbeScript(const std::string& work_dir) {
  return StrCat(
      "w=", ShellQuote(work_dir),
      "\n"
      "echo arch=$(uname -m)\n"
      "echo glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null)\n"
      "if mkdir -p \"$w\" 2>/dev/null && t=\"$w/.probe.$$\" && "
      ": > \"$t\" 2>/dev/null; then rm -f \"$t\"; echo writable=1; "
      "else echo writable=0; fi\n"
      "d=\"$w\"; while [ ! -d \"$d\" ]; do d=$(dirname \"$d\"); done\n"
      "echo abs=$(cd \"$d\" && pwd)\n"
      "echo free_kb=$(df -Pk \"$d\" 2>/dev/null | awk 'NR==2 {print $4}')\n"
      "if command -v nvidia-smi >/dev/null 2>&1; then "
      "nvidia-smi -L 2>/dev/null | sed 's/^/gpu=/'; "
      "else for g in /dev/nvidia[0-9]*; do [ -e \"$g\" ] && echo gpu=$g; "
      "done; fi\n"
      "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | "
      "awk '$4 == \"0A\" {print \"listen=\" $2}'\n"
      "echo time_ns=$(date +%s%N)\n");
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    StrAppend(&out, out.empty() ? "" : " ", ShellQuote(w));
  }
  return out;
}

// A failed remote command as an error naming the host and what it said.
Status CommandFailed(const std::string& label, std::string_view what,
                     const ssh::ExecResult& r) {
  std::string err = r.err.empty() ? r.out : r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) {
    err.pop_back();
  }
  if (const size_t nl = err.rfind('\n'); nl != std::string::npos) {
    err = err.substr(nl + 1);  // the last line says why
  }
  return InternalError(StrCat(label, ": ", what, " failed (exit ",
                              r.exit_status, ")", err.empty() ? "" : ": ",
                              err));
}

}  // namespace

ssh::Target TargetFor(const Plan& plan, const std::string& host,
                      const std::string& user, int port) {
  ssh::Target t;
  t.host = host;
  t.user = user;
  t.port = port;
  t.identity_file = plan.ssh.identity_file;
  t.known_hosts = plan.ssh.known_hosts;
  t.config_file = plan.ssh.config;
  t.connect_timeout = std::chrono::seconds(plan.ssh.connect_timeout);
  t.keepalive_seconds = plan.ssh.keepalive;
  const bool named = plan.profile_source != kBuiltInProfileSource;
  t.trust_command = StrCat(
      "dtf hosts trust ", ShellQuote(host),
      named ? StrCat(" --profile ", ShellQuote(plan.profile_source)) : "");
  return t;
}

RemoteHost::RemoteHost(std::unique_ptr<ssh::Session> session,
                       std::string work_dir)
    : session_(std::move(session)), work_dir_(std::move(work_dir)) {}

Status RemoteHost::Reconnect() {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ssh::Session> session,
                       ssh::Session::Connect(session_->target()));
  session_ = std::move(session);
  return OkStatus();
}

StatusOr<HostFacts> RemoteHost::Probe(std::chrono::milliseconds timeout) {
  const int64_t before = WallMs();
  DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                       session_->Exec(ProbeScript(work_dir_), timeout));
  const int64_t after = WallMs();
  if (r.exit_status != 0) return CommandFailed(Label(), "the probe", r);
  HostFacts f;
  int64_t remote_ms = 0;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    const std::string_view line(r.out.data() + start, end - start);
    start = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    if (key == "arch") {
      f.arch = value;
    } else if (key == "glibc") {
      // "glibc 2.36"
      f.glibc = value.starts_with("glibc ") ? value.substr(6) : "";
    } else if (key == "writable") {
      f.writable = value == "1";
    } else if (key == "abs") {
      f.work_dir = fs::path(work_dir_).is_absolute()
                       ? work_dir_
                       : StrCat(value, "/", work_dir_);
    } else if (key == "free_kb") {
      f.free_bytes = std::strtoull(value.c_str(), nullptr, 10) * 1024;
    } else if (key == "gpu") {
      f.gpus.push_back(value);
    } else if (key == "listen") {
      // "0100007F:1F90" or the IPv6 form: the port after the ':', in hex.
      const size_t colon = value.rfind(':');
      if (colon != std::string::npos) {
        f.listening.push_back(static_cast<int>(
            std::strtol(value.c_str() + colon + 1, nullptr, 16)));
      }
    } else if (key == "time_ns") {
      remote_ms = std::strtoll(value.c_str(), nullptr, 10) / 1000000;
    }
  }
  std::sort(f.listening.begin(), f.listening.end());
  f.listening.erase(std::unique(f.listening.begin(), f.listening.end()),
                    f.listening.end());
  f.clock_skew_ms = remote_ms - (before + after) / 2;
  f.clock_error_ms = (after - before) / 2 + 1;
  return f;
}

StatusOr<ShipReport> RemoteHost::Ship(const ShippedArchive& env,
                                      const ShippedArchive& job) {
  ShipReport report;
  const std::string env_dir = StrCat(work_dir_, "/envs/", env.id);
  DTF_ASSIGN_OR_RETURN(const bool have_env,
                       session_->Exists(StrCat(env_dir, "/", kCompleteMarker)));
  if (!have_env) {
    // Nothing but sh is assumed on the host, so the runtime's files are
    // written one by one and then checked by the shipped dtf itself.
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<pack::ArchiveReader> reader,
                         pack::ArchiveReader::Open(env.zip));
    // A name that would leave the staging directory is refused before
    // anything is written.
    DTF_RETURN_IF_ERROR(reader->CheckEntryNames());
    DTF_ASSIGN_OR_RETURN(const std::string suffix, RandomHex(4));
    const std::string staging =
        StrCat(work_dir_, "/envs/.", env.id, ".part-", suffix);
    const std::string q = ShellQuote(staging);
    for (size_t i = 0; i < reader->entries().size(); ++i) {
      StatusOr<uint64_t> sent = WriteEntry(*reader, i, staging);
      if (!sent.ok()) {
        (void)session_->Exec(StrCat("rm -rf ", q), kCommandTimeout);
        return sent.status();
      }
      report.bytes += *sent;
    }
    const std::string fin = ShellQuote(env_dir);
    const std::string command =
        StrCat(q, "/bin/dtf pack verify ", q, " >/dev/null && : > ", q, "/",
               kCompleteMarker, " && if [ -e ", fin, "/", kCompleteMarker,
               " ]; then rm -rf ", q, "; else rm -rf ", fin, " && mv ", q, " ",
               fin, "; fi");
    DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                         session_->Exec(command, kCommandTimeout));
    if (r.exit_status != 0) {
      (void)session_->Exec(StrCat("rm -rf ", q), kCommandTimeout);
      return CommandFailed(Label(), "checking the shipped runtime", r);
    }
    report.env_uploaded = true;
  }
  const std::string job_dir = StrCat(work_dir_, "/jobs/", job.id);
  DTF_ASSIGN_OR_RETURN(const bool have_job,
                       session_->Exists(StrCat(job_dir, "/", kCompleteMarker)));
  if (!have_job) {
    const std::string zip =
        StrCat(work_dir_, "/archives/", fs::path(job.zip).filename().string());
    DTF_RETURN_IF_ERROR(session_->MakeDirs(StrCat(work_dir_, "/archives")));
    DTF_RETURN_IF_ERROR(session_->Upload(job.zip, zip, 0644));
    report.bytes += job.size;
    const std::string command =
        StrCat(ShellQuote(env_dir), "/bin/dtf pack unpack ", ShellQuote(zip),
               " ", ShellQuote(job_dir), " >/dev/null && : > ",
               ShellQuote(StrCat(job_dir, "/", kCompleteMarker)));
    DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                         session_->Exec(command, kCommandTimeout));
    if (r.exit_status != 0) {
      return CommandFailed(Label(), "unpacking the job", r);
    }
    report.job_uploaded = true;
  }
  return report;
}

StatusOr<uint64_t> RemoteHost::WriteEntry(const pack::ArchiveReader& reader,
                                          size_t index,
                                          const std::string& dir) {
  const pack::ArchiveReader::Entry& e = reader.entries()[index];
  const std::string path = StrCat(dir, "/", e.name);
  DTF_RETURN_IF_ERROR(
      session_->MakeDirs(fs::path(path).parent_path().string()));
  DTF_ASSIGN_OR_RETURN(const std::string data,
                       reader.ReadAll(index, uint64_t{1} << 32));
  const int mode = (e.mode & 0111) != 0 ? 0755 : 0644;
  DTF_RETURN_IF_ERROR(session_->WriteFile(path, data, mode));
  return data.size();
}

Status RemoteHost::PrepareRun(const Plan& plan, const std::string& secret,
                              const std::vector<const TaskPlan*>& tasks,
                              const std::vector<TlsFile>& tls_files,
                              std::string_view s3_credentials) {
  const std::string run_dir = StrCat(work_dir_, "/runs/", plan.run_id);
  DTF_RETURN_IF_ERROR(session_->MakeDirs(run_dir));
  DTF_RETURN_IF_ERROR(
      session_->WriteFile(StrCat(run_dir, "/", kSecretFile), secret, 0600));
  if (!s3_credentials.empty()) {
    DTF_RETURN_IF_ERROR(
        session_->WriteFile(StrCat(run_dir, "/", kS3CredentialsFile),
                            std::string(s3_credentials), 0600));
  }
  if (!tls_files.empty()) {
    const std::string tls_dir = TlsDirOf(run_dir);
    DTF_RETURN_IF_ERROR(session_->MakeDirs(tls_dir, 0700));
    for (const TlsFile& f : tls_files) {
      DTF_RETURN_IF_ERROR(
          session_->WriteFile(StrCat(tls_dir, "/", f.name), f.contents, 0600));
    }
  }
  for (const TaskPlan* t : tasks) {
    DTF_RETURN_IF_ERROR(session_->MakeDirs(t->dir));
    if (plan.resume) {
      // What the run's last attempt left that the new one must not read.
      DTF_ASSIGN_OR_RETURN(
          const ssh::ExecResult r,
          session_->Exec(Join({"rm", "-f", StrCat(t->dir, "/", kReadyFile),
                               StrCat(t->dir, "/", kExitFile),
                               StrCat(t->dir, "/", kPidFile)}),
                         kCommandTimeout));
      if (r.exit_status != 0) {
        return CommandFailed(Label(), StrCat("clearing ", t->dir), r);
      }
    }
    DTF_RETURN_IF_ERROR(session_->WriteFile(StrCat(t->dir, "/", kEnvFile),
                                            EnvFileText(t->env), 0600));
  }
  return OkStatus();
}

Status RemoteHost::CheckRemoteData(const Plan& plan, const TaskPlan& task) {
  std::vector<std::string> words = {Runtime(plan, task), "task", "check-data"};
  for (size_t i = 2; i + 1 < task.argv.size(); ++i) {
    const std::string& flag = task.argv[i];
    if (flag == "--job" || flag == "--set" || flag == "--s3-credentials") {
      words.push_back(flag);
      words.push_back(task.argv[++i]);
    }
  }
  DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                       session_->Exec(Join(words), kCommandTimeout));
  if (r.exit_status == 0) return OkStatus();
  const Status failed =
      CommandFailed(Label(), "the check of the job's data in its bucket", r);
  return FailedPreconditionError(StrCat("preflight: ", Message(failed)));
}

std::string RemoteHost::Runtime(const Plan& plan, const TaskPlan& task) const {
  return StrCat(task.work_dir, "/envs/", plan.env_id, "/bin/dtf");
}

StatusOr<ProcessId> RemoteHost::StartTask(const Plan& plan,
                                          const TaskPlan& task, bool restart) {
  std::vector<std::string> words = {Runtime(plan, task),
                                    "task",
                                    "exec",
                                    "--task",
                                    task.name(),
                                    "--dir",
                                    task.dir,
                                    "--env-file",
                                    StrCat(task.dir, "/", kEnvFile)};
  if (restart) words.push_back("--append");
  words.push_back("--");
  const std::vector<std::string> argv = restart ? RestartArgv(task) : task.argv;
  words.insert(words.end(), argv.begin(), argv.end());
  std::string command = Join(words);
  if (restart) {
    // What the failed attempt left must not be read as the new one's.
    command = StrCat(
        Join({"rm", "-f", StrCat(task.dir, "/", kReadyFile),
              StrCat(task.dir, "/", kExitFile), StrCat(task.dir, "/", kPidFile),
              StrCat(task.dir, "/", kStopMarkerFile)}),
        " && ", command);
  }
  DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                       session_->Exec(command, kCommandTimeout));
  if (r.exit_status != 0) {
    return CommandFailed(Label(), StrCat("starting ", task.name()), r);
  }
  ProcessId id;
  char* end = nullptr;
  id.pid = static_cast<pid_t>(std::strtol(r.out.c_str(), &end, 10));
  id.start_ticks = std::strtoull(end, nullptr, 10);
  if (id.pid <= 0) {
    return InternalError(StrCat(Label(), ": starting ", task.name(),
                                ": no pid in \"", r.out, "\""));
  }
  return id;
}

StatusOr<std::vector<std::string>> RemoteHost::SignalTasks(
    const Plan& plan, const std::vector<const TaskPlan*>& tasks, bool kill) {
  std::vector<std::string> signalled;
  if (tasks.empty()) return signalled;
  std::string command;
  for (const TaskPlan* t : tasks) {
    StrAppend(&command, ShellQuote(Runtime(plan, *t)), " task signal --signal ",
              kill ? "KILL" : "TERM", " --dir ", ShellQuote(t->dir),
              " 2>&1 || echo error\n");
  }
  DTF_ASSIGN_OR_RETURN(const ssh::ExecResult r,
                       session_->Exec(command, kCommandTimeout));
  size_t start = 0;
  for (const TaskPlan* t : tasks) {
    size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    if (std::string_view(r.out).substr(start, end - start) == "signalled") {
      signalled.push_back(t->name());
    }
    start = std::min(end + 1, r.out.size());
  }
  return signalled;
}

StatusOr<std::optional<std::string>> RemoteHost::ReadAt(const std::string& path,
                                                        uint64_t offset,
                                                        size_t max) {
  return session_->ReadAt(path, offset, max);
}

}  // namespace dtf::launch
