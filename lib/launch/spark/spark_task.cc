#include "lib/launch/spark/spark_task.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch::spark {
namespace {

std::string Join(const std::vector<std::string>& parts, size_t from,
                 size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (i > from) out += ",";
    out += parts[i];
  }
  return out;
}

}  // namespace

std::vector<std::string> SparkTaskArgv(const SparkTaskSpec& spec) {
  std::vector<std::string> argv = {spec.binary,
                                   "task",
                                   "spark",
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
  for (const std::string& set : spec.sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  if (spec.resume) argv.push_back("--restore");
  if (spec.tls) argv.push_back("--tls");
  if (spec.s3) argv.push_back("--s3");
  if (spec.batch) argv.push_back("--batch");
  if (!spec.metrics_out.empty()) {
    argv.push_back("--metrics-out");
    argv.push_back(spec.metrics_out);
  }
  return argv;
}

namespace {

// The checks both commands make, and the task's files.
StatusOr<SparkServeCommand> SparkTaskFiles(const SparkTaskSpec& spec) {
  const size_t count = static_cast<size_t>(spec.ps + spec.workers);
  if (spec.addresses.size() != count) {
    return InvalidArgumentError(
        StrCat("--addresses: ", spec.addresses.size(), " addresses for ",
               spec.ps, " parameter servers and ", spec.workers, " workers"));
  }
  for (const std::string& a : spec.addresses) {
    const size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) {
      return InvalidArgumentError(
          StrCat("--addresses: ", QuoteForMessage(a), " is not host:port"));
    }
  }
  if (spec.task_id < 0 || static_cast<size_t>(spec.task_id) >= count) {
    return InvalidArgumentError(StrCat("--task-id ", spec.task_id,
                                       ": out of range for ", count, " tasks"));
  }
  SparkServeCommand c;
  const bool ps = spec.task_id < spec.ps;
  c.task = TaskName{ps ? Role::kPs : Role::kWorker,
                    ps ? spec.task_id : spec.task_id - spec.ps};
  const std::string& me = spec.addresses[static_cast<size_t>(spec.task_id)];
  c.host = me.substr(0, me.rfind(':'));
  c.dir = StrCat(spec.run_dir, "/", TaskDirName(c.task.role, c.task.index));
  c.stdout_file = StrCat(c.dir, "/", kStdoutFile);
  c.stderr_file = StrCat(c.dir, "/", kStderrFile);
  c.exit_file = StrCat(c.dir, "/", kExitFile);
  return c;
}

}  // namespace

StatusOr<SparkServeCommand> MakeSparkBatchCommand(
    const SparkTaskSpec& spec,
    const std::vector<std::vector<std::string>>& commands) {
  if (!spec.batch || spec.ps != 0) {
    return InvalidArgumentError(
        StrCat("run ", spec.run_id, ": a batch run has workers only"));
  }
  if (commands.size() != static_cast<size_t>(spec.workers)) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id, " has ",
                                       commands.size(), " task commands for ",
                                       spec.workers, " workers"));
  }
  DTF_ASSIGN_OR_RETURN(SparkServeCommand c, SparkTaskFiles(spec));
  c.argv = commands[static_cast<size_t>(c.task.index)];
  if (c.argv.empty()) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id,
                                       " gives ", c.task.ToString(),
                                       " no command"));
  }
  c.argv[0] = spec.binary;
  return c;
}

StatusOr<SparkServeCommand> MakeSparkServeCommand(const SparkTaskSpec& spec) {
  DTF_ASSIGN_OR_RETURN(SparkServeCommand c, SparkTaskFiles(spec));
  const size_t count = static_cast<size_t>(spec.ps + spec.workers);
  const bool ps = c.task.role == Role::kPs;
  const size_t n_ps = static_cast<size_t>(spec.ps);
  c.argv = {spec.binary,     "serve",
            "--job",         spec.job,
            "--role",        std::string(RoleName(c.task.role)),
            "--index",       std::to_string(c.task.index),
            "--ps",          Join(spec.addresses, 0, n_ps),
            "--workers",     Join(spec.addresses, n_ps, count),
            "--run-id",      spec.run_id,
            "--run-dir",     spec.run_dir,
            "--secret-file", StrCat(spec.run_dir, "/", kSecretFile),
            "--ready-file",  StrCat(c.dir, "/", kReadyFile),
            "--threads",     std::to_string(spec.threads)};
  for (const std::string& set : spec.sets) {
    c.argv.push_back("--set");
    c.argv.push_back(set);
  }
  if (spec.resume) c.argv.push_back("--restore");
  if (!ps && c.task.index == 0 && !spec.metrics_out.empty()) {
    c.argv.push_back("--metrics-out");
    c.argv.push_back(spec.metrics_out);
  }
  if (spec.tls) {
    c.argv.push_back("--tls-dir");
    c.argv.push_back(StrCat(spec.run_dir, "/", kTlsDir));
    // The certificates were made before Spark placed the tasks: each names
    // its task, which the peers check.
    c.argv.push_back("--tls-task-names");
  }
  if (spec.s3) {
    c.argv.push_back("--s3-credentials");
    c.argv.push_back(StrCat(spec.run_dir, "/", kS3CredentialsFile));
  }
  return c;
}

StatusOr<ExitInfo> RunSparkTask(const SparkServeCommand& command,
                                const std::atomic<bool>* cancel) {
  std::error_code ec;
  std::filesystem::create_directories(command.dir, ec);
  if (ec) {
    return FailedPreconditionError(
        StrCat(command.task.ToString(), ": cannot create ", command.dir, ": ",
               ec.message(),
               " (the run directory must be on storage the executors share "
               "with the launcher: spark.run_dir)"));
  }
  (void)WriteFileAtomically(StrCat(command.dir, "/", kNodeFile),
                            StrCat(command.host, "\n"));
  SpawnOptions options;
  options.argv = command.argv;
  options.stdout_file = command.stdout_file;
  options.stderr_file = command.stderr_file;
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
  const bool told = stopped || (cancel != nullptr && cancel->load());
  record.state = exit->code == 0 && exit->signal == 0 ? TaskState::kExited
                 : told                               ? TaskState::kStopped
                                                      : TaskState::kFailed;
  DTF_RETURN_IF_ERROR(WriteExitRecord(command.exit_file, record));
  return *exit;
}

}  // namespace dtf::launch::spark
