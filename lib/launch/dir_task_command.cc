#include "lib/launch/dir_task_command.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {

std::vector<std::string> DirTaskArgv(
    const DirRunSpec& spec, std::string_view backend,
    const std::vector<std::string>& own_flags,
    const std::vector<std::string>& own_switches) {
  std::vector<std::string> argv = {spec.binary,
                                   "task",
                                   std::string(backend),
                                   "--job",
                                   spec.job,
                                   "--run-dir",
                                   spec.run_dir,
                                   "--run-id",
                                   spec.run_id,
                                   "--ps",
                                   std::to_string(spec.ps),
                                   "--workers",
                                   std::to_string(spec.workers),
                                   "--threads",
                                   std::to_string(spec.threads)};
  argv.insert(argv.end(), own_flags.begin(), own_flags.end());
  for (const std::string& set : spec.sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  if (spec.resume) argv.push_back("--restore");
  if (spec.tls) argv.push_back("--tls");
  if (spec.s3) argv.push_back("--s3");
  if (spec.batch) argv.push_back("--batch");
  if (spec.started_workers > 0) {
    argv.push_back("--started-workers");
    argv.push_back(std::to_string(spec.started_workers));
  }
  argv.insert(argv.end(), own_switches.begin(), own_switches.end());
  if (!spec.metrics_out.empty()) {
    argv.push_back("--metrics-out");
    argv.push_back(spec.metrics_out);
  }
  return argv;
}

DirTaskCommand DirTaskFiles(const DirRunSpec& spec, TaskName task,
                            std::string host) {
  DirTaskCommand c;
  c.task = task;
  c.host = std::move(host);
  c.dir = StrCat(spec.run_dir, "/", TaskDirName(task.role, task.index));
  c.stdout_file = StrCat(c.dir, "/", kStdoutFile);
  c.stderr_file = StrCat(c.dir, "/", kStderrFile);
  c.exit_file = StrCat(c.dir, "/", kExitFile);
  return c;
}

std::vector<std::string> DirServeArgv(const DirRunSpec& spec,
                                      const DirTaskCommand& command,
                                      const std::string& ps,
                                      const std::string& workers) {
  std::vector<std::string> argv = {
      spec.binary,     "serve",
      "--job",         spec.job,
      "--role",        std::string(RoleName(command.task.role)),
      "--index",       std::to_string(command.task.index),
      "--ps",          ps,
      "--workers",     workers,
      "--run-id",      spec.run_id,
      "--run-dir",     spec.run_dir,
      "--secret-file", StrCat(spec.run_dir, "/", kSecretFile),
      "--ready-file",  StrCat(command.dir, "/", kReadyFile),
      "--threads",     std::to_string(spec.threads)};
  for (const std::string& set : spec.sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  if (spec.resume) argv.push_back("--restore");
  if (spec.started_workers > 0) {
    argv.push_back("--started-workers");
    argv.push_back(std::to_string(spec.started_workers));
  }
  return argv;
}

void AppendServeTail(const DirRunSpec& spec, const TaskName& task,
                     std::vector<std::string>* argv) {
  if (task.role == Role::kWorker && task.index == 0 &&
      !spec.metrics_out.empty()) {
    argv->push_back("--metrics-out");
    argv->push_back(spec.metrics_out);
  }
  if (spec.tls) {
    argv->push_back("--tls-dir");
    argv->push_back(StrCat(spec.run_dir, "/", kTlsDir));
    argv->push_back("--tls-task-names");
  }
  if (spec.s3) {
    argv->push_back("--s3-credentials");
    argv->push_back(StrCat(spec.run_dir, "/", kS3CredentialsFile));
  }
}

Status CheckBatchCommands(
    const DirRunSpec& spec,
    const std::vector<std::vector<std::string>>& commands) {
  if (commands.size() != static_cast<size_t>(spec.workers)) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id, " has ",
                                       commands.size(), " task commands for ",
                                       spec.workers, " workers"));
  }
  return OkStatus();
}

StatusOr<std::vector<std::string>> DirBatchArgv(
    const DirRunSpec& spec, const TaskName& task,
    const std::vector<std::vector<std::string>>& commands) {
  DTF_RETURN_IF_ERROR(CheckBatchCommands(spec, commands));
  if (task.index < 0 || static_cast<size_t>(task.index) >= commands.size() ||
      commands[static_cast<size_t>(task.index)].empty()) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id,
                                       " gives ", task.ToString(),
                                       " no command"));
  }
  return commands[static_cast<size_t>(task.index)];
}

StatusOr<ExitInfo> RunDirTask(const DirTaskCommand& command,
                              const std::atomic<bool>* cancel, bool append,
                              std::string_view shared_hint) {
  std::error_code ec;
  std::filesystem::create_directories(command.dir, ec);
  if (ec) {
    return FailedPreconditionError(
        StrCat(command.task.ToString(), ": cannot create ", command.dir, ": ",
               ec.message(), " (", shared_hint, ")"));
  }
  // Best effort: only messages name the host.
  (void)WriteFileAtomically(StrCat(command.dir, "/", kNodeFile),
                            StrCat(command.host, "\n"));
  SpawnOptions options;
  options.argv = command.argv;
  options.env = command.env;
  options.stdout_file = command.stdout_file;
  options.stderr_file = command.stderr_file;
  options.append = append;
  DTF_ASSIGN_OR_RETURN(const ProcessId id, Spawn(options));
  bool stopped = false;
  std::optional<ExitInfo> exit;
  while (!(exit = TryReap(id.pid))) {
    if (!stopped && cancel != nullptr && cancel->load()) {
      stopped = SignalGroup(id, SIGTERM);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ExitRecord record;
  record.task = command.task.ToString();
  record.exit_code = exit->code;
  record.signal = exit->signal;
  record.finished_ms = NowMs();
  // The engine may signal every process of the task, this one's child
  // too: it may be gone before it was passed the signal, and was stopped
  // all the same.
  const bool told = stopped || (cancel != nullptr && cancel->load());
  record.state = exit->code == 0 && exit->signal == 0 ? TaskState::kExited
                 : told                               ? TaskState::kStopped
                                                      : TaskState::kFailed;
  DTF_RETURN_IF_ERROR(WriteExitRecord(command.exit_file, record));
  return *exit;
}

StatusOr<bool> AwaitSlotStart(const DirRunSpec& spec,
                              const DirTaskCommand& command,
                              const std::atomic<bool>* cancel) {
  const std::string start = StrCat(command.dir, "/", kStartFile);
  const std::string chief_exit =
      StrCat(spec.run_dir, "/", TaskDirName(Role::kWorker, 0), "/", kExitFile);
  for (;;) {
    std::error_code ec;
    const bool cancelled = cancel != nullptr && *cancel;
    if (!cancelled && std::filesystem::exists(start, ec)) return true;
    if (std::filesystem::exists(chief_exit, ec)) {
      ExitRecord record;
      record.task = command.task.ToString();
      record.state = TaskState::kReserved;
      record.finished_ms = NowMs();
      DTF_RETURN_IF_ERROR(WriteExitRecord(command.exit_file, record));
      return false;
    }
    if (cancelled) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status RecordDirTaskFailure(const DirTaskCommand& command,
                            std::string_view why) {
  std::error_code ec;
  std::filesystem::create_directories(command.dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), command.dir);
  (void)WriteFileAtomically(StrCat(command.dir, "/", kNodeFile),
                            StrCat(command.host, "\n"));
  {
    std::ofstream err(command.stderr_file, std::ios::app);
    err << "error: " << why << "\n";
    if (!err.flush()) return ErrnoToStatus(errno, command.stderr_file);
  }
  ExitRecord record;
  record.task = command.task.ToString();
  record.state = TaskState::kFailed;
  record.exit_code = 1;
  record.finished_ms = NowMs();
  return WriteExitRecord(command.exit_file, record);
}

}  // namespace dtf::launch
