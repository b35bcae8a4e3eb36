// dtf task: what the backends run on a task's host. `exec` starts a task
// detached from the SSH session with a monitor that records its exit;
// `signal` stops it by its recorded process group; `slurm` is one srun task
// of a batch job becoming its `dtf serve` (or, in a batch run, the command
// the run's plan gives it); `spark` is one barrier task of a Spark run's
// application becoming its `dtf serve`; `shard-fetch` and `shard-release` hand
// a scored shard to the dtf predict that started it, where it can only run a
// command (`kubectl exec` into a pod); `check-data` is an SSH run's
// preflight of the job's data in its bucket on each host.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/remote_preflight.h"
#include "cmd/task_storage.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/batch/shards.h"
#include "lib/launch/dir_task_command.h"
#include "lib/launch/k8s/task_keys.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/run_task.h"
#include "lib/launch/slurm/slurm_task.h"
#include "lib/launch/slurm/step_record.h"
#include "lib/launch/spark/spark_task.h"
#include "lib/launch/ssh/task_exec.h"

extern char** environ;

namespace dtf::cli {
namespace {

struct TaskFlags {
  launch::TaskExecOptions exec;
  std::string signal = "TERM";
  launch::slurm::SlurmRunSpec slurm;
  launch::spark::SparkTaskSpec spark;
  std::string spark_addresses;
  std::string shard;  // shard-fetch, shard-release: the shard's output
  // check-data: the job, its --set values and the run's S3 file.
  std::string job;
  std::vector<std::string> sets;
  std::string s3_credentials;
};

// The job's data in its bucket as this host reaches it, with the run's S3
// settings (an SSH run's per-host preflight).
Status RunCheckData(const TaskFlags& f) {
  if (!f.s3_credentials.empty()) {
    DTF_RETURN_IF_ERROR(ConfigureStorageFromTaskFile(f.s3_credentials));
  }
  return CheckRemoteData(f.job, f.sets);
}

Status RunShardFetch(const std::string& shard) {
  if (launch::ShardWasFetched(shard)) {
    return FailedPreconditionError(StrCat(
        shard, ": already released (", launch::ShardFetchedPath(shard), ")"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string index,
                       ReadFileToString(launch::ShardIndexPath(shard)));
  DTF_ASSIGN_OR_RETURN(const std::string output, ReadFileToString(shard));
  return PrintStdout(launch::ShardFrame(index, output));
}

Status RunShardRelease(const std::string& shard) {
  std::error_code ec;
  if (!std::filesystem::exists(launch::ShardIndexPath(shard), ec)) {
    return NotFoundError(StrCat(shard, ": no scored shard here (no ",
                                launch::ShardIndexPath(shard), ")"));
  }
  return WriteFileAtomically(launch::ShardFetchedPath(shard), "fetched\n");
}

Status RunTaskExec(const TaskFlags& f) {
  DTF_ASSIGN_OR_RETURN(const launch::ProcessId id,
                       launch::StartMonitoredTask(f.exec));
  return PrintStdout(StrCat(id.pid, " ", id.start_ticks, "\n"));
}

Status RunTaskSignal(const TaskFlags& f) {
  const int signal = f.signal == "KILL" ? SIGKILL : SIGTERM;
  DTF_ASSIGN_OR_RETURN(const bool signalled,
                       launch::SignalTask(f.exec.dir, signal));
  return PrintStdout(signalled ? "signalled\n" : "gone\n");
}

// The command of each worker of the batch run in `run_dir`, from its
// plan.json (written before the job was submitted).
StatusOr<std::vector<std::vector<std::string>>> BatchCommands(
    const std::string& run_dir, const std::string& run_id) {
  const std::string file = StrCat(run_dir, "/", launch::kPlanFile);
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(file));
  DTF_ASSIGN_OR_RETURN(const launch::Plan plan,
                       launch::PlanFromJson(text, file));
  if (!plan.batch || plan.run_id != run_id) {
    return FailedPreconditionError(
        StrCat(file, ": not the plan of batch run ", run_id));
  }
  std::vector<std::vector<std::string>> commands;
  for (const launch::TaskPlan& t : plan.tasks) {
    if (t.role == Role::kWorker) commands.push_back(t.argv);
  }
  return commands;
}

// A training task of a run whose job has data or output in a bucket checks,
// before its dtf serve starts, that this host reaches them with the run's
// S3 settings: a node that cannot fails its task at once, its stderr and
// the run's error naming the host, the bucket and the key. False when it
// failed (recorded as the task's end).
StatusOr<bool> TaskDataPreflight(const launch::DirRunSpec& spec,
                                 const launch::DirTaskCommand& command,
                                 Context* ctx) {
  if (!spec.s3 || spec.batch) return true;
  Status status = ConfigureStorageFromTaskFile(
      StrCat(spec.run_dir, "/", launch::kS3CredentialsFile));
  if (status.ok()) status = CheckRemoteData(spec.job, spec.sets);
  if (status.ok()) return true;
  DTF_RETURN_IF_ERROR(launch::RecordDirTaskFailure(
      command, StrCat(command.task.ToString(), " on ", command.host,
                      ": the job's data: ", Message(status))));
  ctx->exit_code = 1;
  ctx->console.Info(StrCat(command.task.ToString(), " on ", command.host, ": ",
                           Message(status)));
  return false;
}

Status RunTaskSlurm(TaskFlags* f, Context* ctx) {
  launch::slurm::Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos)
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  DTF_ASSIGN_OR_RETURN(f->slurm.binary, SelfExecutable());
  const launch::slurm::SlurmRunSpec& spec = f->slurm;
  if (spec.replace >= 0) {
    // Started again in a step of its own: the place of task `replace` in
    // the run's first step, from that task's record.
    const bool ps = spec.replace < spec.ps;
    const std::string record =
        StrCat(spec.run_dir, "/",
               launch::TaskDirName(ps ? Role::kPs : Role::kWorker,
                                   ps ? spec.replace : spec.replace - spec.ps),
               "/", launch::slurm::kStepRecordFile);
    DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(record));
    DTF_RETURN_IF_ERROR(launch::slurm::ApplyStepRecord(text, record, &env));
  }
  launch::slurm::SlurmServeCommand command;
  if (f->slurm.batch) {
    DTF_ASSIGN_OR_RETURN(const auto commands,
                         BatchCommands(f->slurm.run_dir, f->slurm.run_id));
    DTF_ASSIGN_OR_RETURN(
        command, launch::slurm::MakeSlurmBatchCommand(f->slurm, env, commands));
  } else {
    DTF_ASSIGN_OR_RETURN(command,
                         launch::slurm::MakeSlurmServeCommand(f->slurm, env));
  }
  if (spec.replace < 0 && !spec.batch) {
    // Where this task is, for a replacement (above) should it fail.
    DTF_ASSIGN_OR_RETURN(const launch::slurm::SlurmStep step,
                         launch::slurm::ReadSlurmStep(env));
    std::error_code ec;
    std::filesystem::create_directories(command.dir, ec);
    DTF_RETURN_IF_ERROR(WriteFileAtomically(
        StrCat(command.dir, "/", launch::slurm::kStepRecordFile),
        launch::slurm::StepRecordText(step)));
  }
  if (spec.replace < 0 && launch::ReservedSlot(spec, command.task)) {
    // A reserved worker slot: its place in the step (and the allocation's
    // share of it) is held until dtf scale starts it or the run ends.
    DTF_ASSIGN_OR_RETURN(const bool start,
                         launch::AwaitSlotStart(spec, command, ctx->cancel));
    if (!start) return OkStatus();
  }
  DTF_ASSIGN_OR_RETURN(const bool reached,
                       TaskDataPreflight(spec, command, ctx));
  if (!reached) return OkStatus();
  DTF_ASSIGN_OR_RETURN(
      const launch::ExitInfo exit,
      launch::slurm::RunSlurmTask(command, ctx->cancel,
                                  /*append=*/spec.replace >= 0));
  if (exit.ShellCode() != 0) {
    ctx->exit_code = exit.ShellCode();
    ctx->console.Info(StrCat(command.slot.name(), " ", exit.Describe(), " (",
                             command.stderr_file, ")"));
  }
  return OkStatus();
}

Status RunTaskSpark(TaskFlags* f, Context* ctx) {
  launch::spark::SparkTaskSpec& spec = f->spark;
  DTF_ASSIGN_OR_RETURN(spec.binary, SelfExecutable());
  spec.addresses.clear();
  std::string_view rest = f->spark_addresses;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    spec.addresses.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  launch::spark::SparkServeCommand command;
  if (spec.batch) {
    DTF_ASSIGN_OR_RETURN(const auto commands,
                         BatchCommands(spec.run_dir, spec.run_id));
    DTF_ASSIGN_OR_RETURN(command,
                         launch::spark::MakeSparkBatchCommand(spec, commands));
  } else {
    DTF_ASSIGN_OR_RETURN(command, launch::spark::MakeSparkServeCommand(spec));
  }
  DTF_ASSIGN_OR_RETURN(const bool reached,
                       TaskDataPreflight(spec, command, ctx));
  if (!reached) return OkStatus();
  DTF_ASSIGN_OR_RETURN(const launch::ExitInfo exit,
                       launch::spark::RunSparkTask(command, ctx->cancel));
  if (exit.ShellCode() != 0) {
    ctx->exit_code = exit.ShellCode();
    ctx->console.Info(StrCat(command.task.ToString(), " ", exit.Describe(),
                             " (", command.stderr_file, ")"));
  }
  return OkStatus();
}

void SetupTaskSpark(CLI::App* sub, std::shared_ptr<TaskFlags> f, Context* ctx) {
  CLI::App* spark = sub->add_subcommand(
      "spark",
      "Run this Spark barrier task's dtf serve: its role and index from "
      "its partition, its peers from the gathered addresses (what a Spark "
      "run's driver runs)");
  launch::spark::SparkTaskSpec& s = f->spark;
  spark->add_option("--job", s.job, "The job file")->required();
  spark
      ->add_option("--run-dir", s.run_dir,
                   "The run directory, shared with the launcher")
      ->required();
  spark->add_option("--run-id", s.run_id, "The run's id")->required();
  spark->add_option("--ps", s.ps, "Parameter servers: the first partitions")
      ->required()
      ->check(CLI::Range(0, 1000));
  spark->add_option("--workers", s.workers, "Workers: the other partitions")
      ->required()
      ->check(CLI::Range(1, 10000));
  spark
      ->add_option("--threads", s.threads,
                   "Compute threads per task (default 0: each decides)")
      ->check(CLI::Range(0, 4096));
  spark->add_option("--set", s.sets,
                    "section.key=value for every task (repeatable)");
  spark->add_flag("--restore", s.resume,
                  "Every task restores the run's last checkpoint");
  spark->add_flag("--tls", s.tls, "Mutual TLS from RUN_DIR/tls");
  spark->add_flag("--s3", s.s3,
                  "S3 settings and credentials from RUN_DIR/s3-credentials");
  spark->add_flag("--batch", s.batch,
                  "A batch run (dtf predict --profile): run the command "
                  "RUN_DIR/plan.json gives this worker instead of dtf serve");
  spark->add_option("--metrics-out", s.metrics_out,
                    "The chief's metrics file (absolute)");
  spark->add_option("--task-id", s.task_id, "This task's partition")
      ->required()
      ->check(CLI::Range(0, 11000));
  spark
      ->add_option("--addresses", f->spark_addresses,
                   "Every task's host:port, in partition order, "
                   "comma-separated")
      ->required();
  spark->callback([f, ctx] { ctx->status = RunTaskSpark(f.get(), ctx); });
}

// dtf task keys: a Kubernetes pod's init container.
struct KeysFlags {
  std::string from, to, task, index_env, role = "worker";
  int ps = -1, workers = 0, offset = 0;
};

Status RunTaskKeys(const KeysFlags& k) {
  TaskName task;
  if (!k.task.empty()) {
    DTF_ASSIGN_OR_RETURN(task, ParseTaskName(k.task));
  } else {
    if (k.index_env.empty()) {
      return InvalidArgumentError("give --task or --index-from-env");
    }
    const char* value = std::getenv(k.index_env.c_str());
    if (value == nullptr) {
      return InvalidArgumentError(StrCat("--index-from-env ", k.index_env,
                                         ": the variable is not set"));
    }
    DTF_ASSIGN_OR_RETURN(const Role role, ParseRole(k.role));
    DTF_ASSIGN_OR_RETURN(
        task, launch::k8s::TaskFromIndex(k.index_env, value, k.ps, k.workers,
                                         role, k.offset));
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> copied,
                       launch::k8s::CopyTaskKeys(k.from, k.to, task));
  std::fprintf(stderr, "dtf: %s: %s from %s to %s\n", task.ToString().c_str(),
               absl::StrJoin(copied, ", ").c_str(), k.from.c_str(),
               k.to.c_str());
  return OkStatus();
}

void SetupTaskKeys(CLI::App* sub, Context* ctx) {
  auto k = std::make_shared<KeysFlags>();
  CLI::App* keys = sub->add_subcommand(
      "keys",
      "Copy the run's secret, the CA's certificate and this task's own "
      "certificate and key (never another task's) from the run's Secret "
      "into the pod's memory volume (a Kubernetes pod's init container)");
  keys->add_option("--from", k->from, "The run's Secret, mounted")->required();
  keys->add_option("--to", k->to, "Where the task's container finds them")
      ->required();
  keys->add_option("--task", k->task, "The task (worker:0)");
  keys->add_option("--index-from-env", k->index_env,
                   "The variable holding the pod's index");
  keys->add_option("--ps", k->ps,
                   "With --index-from-env: the run's parameter servers, "
                   "numbered first (an Indexed Job)");
  keys->add_option("--workers", k->workers, "With --ps: the run's workers");
  keys->add_option("--role", k->role,
                   "Without --ps: the role of every pod of the template");
  keys->add_option("--index-offset", k->offset,
                   "Without --ps: added to the index (a TFJob's workers "
                   "after the chief: 1)");
  keys->callback([k, ctx] { ctx->status = RunTaskKeys(*k); });
}

void SetupTaskSlurm(CLI::App* sub, const std::shared_ptr<TaskFlags>& f,
                    Context* ctx) {
  CLI::App* slurm = sub->add_subcommand(
      "slurm",
      "Run this srun task's dtf serve: its role, index and peers from "
      "SLURM_PROCID and the step's nodes (what a Slurm run's batch script "
      "runs)");
  launch::slurm::SlurmRunSpec& s = f->slurm;
  slurm->add_option("--job", s.job, "The job file (absolute)")->required();
  slurm
      ->add_option("--run-dir", s.run_dir,
                   "The run directory, shared by the nodes")
      ->required();
  slurm->add_option("--run-id", s.run_id, "The run's id")->required();
  slurm->add_option("--ps", s.ps, "Parameter servers: the first task ids")
      ->required()
      ->check(CLI::Range(0, 1000));
  slurm->add_option("--workers", s.workers, "Workers: the other task ids")
      ->required()
      ->check(CLI::Range(1, 10000));
  slurm
      ->add_option("--threads", s.threads,
                   "Compute threads per task (default 0: each decides)")
      ->check(CLI::Range(0, 4096));
  slurm
      ->add_option("--base-port", s.base_port,
                   "Task k of a node listens on BASE + k (default 29500)")
      ->check(CLI::Range(1, 65535));
  slurm
      ->add_option("--gpus-per-node", s.gpus_per_node,
                   "GPUs of a node its workers take in turn (default 0)")
      ->check(CLI::Range(0, 1024));
  slurm->add_option("--set", s.sets,
                    "section.key=value for every task (repeatable)");
  slurm->add_flag("--restore", s.resume,
                  "Every task restores the run's last checkpoint");
  slurm->add_flag("--tls", s.tls, "Mutual TLS from RUN_DIR/tls");
  slurm->add_flag("--s3", s.s3,
                  "S3 settings and credentials from RUN_DIR/s3-credentials");
  slurm->add_flag("--batch", s.batch,
                  "A batch run (dtf predict --profile): run the command "
                  "RUN_DIR/plan.json gives this worker instead of dtf serve");
  slurm->add_option("--metrics-out", s.metrics_out,
                    "The chief's metrics file (absolute)");
  slurm
      ->add_option("--started-workers", s.started_workers,
                   "Workers started at launch: the worker slots above wait "
                   "in their places until RUN_DIR/<task>/start appears "
                   "(dtf scale)")
      ->check(CLI::Range(1, 10000));
  slurm
      ->add_option("--replace", s.replace,
                   "Start task id K again in a job step of its own (srun "
                   "--overlap, one task): its place in the run's first step "
                   "from RUN_DIR/<task>/slurm-step, its output appended")
      ->check(CLI::Range(0, 1000000));
  slurm->callback([f, ctx] { ctx->status = RunTaskSlurm(f.get(), ctx); });
}

}  // namespace

void SetupTask(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<TaskFlags>();
  CLI::App* sub = app->add_subcommand(
      "task",
      "Start or signal one task of a run on this host (what dtf launch runs "
      "over SSH)");
  sub->require_subcommand(1);

  CLI::App* exec = sub->add_subcommand(
      "exec",
      "Start COMMAND detached, in its own session, output to DIR/stdout and "
      "DIR/stderr, its pid in DIR/pid and its exit in DIR/exit.json; print "
      "its pid");
  exec->add_option("--task", f->exec.task, "The task's name (worker:1)")
      ->required();
  exec->add_option("--dir", f->exec.dir, "The task's directory")->required();
  exec->add_option("--env-file", f->exec.env_file,
                   "Environment for the task: NAME=VALUE entries, each ended "
                   "by a NUL byte");
  exec->add_flag("--append", f->exec.append,
                 "Append to DIR/stdout and DIR/stderr");
  exec->add_option("command", f->exec.argv,
                   "The program (an absolute path) and its arguments, after "
                   "--")
      ->required();
  exec->callback([f, ctx] { ctx->status = RunTaskExec(*f); });

  CLI::App* signal = sub->add_subcommand(
      "signal",
      "Signal the process group of the task recorded in DIR/pid (never a "
      "recycled pid), marking it stopped; print signalled or gone");
  signal->add_option("--dir", f->exec.dir, "The task's directory")->required();
  signal->add_option("--signal", f->signal, "TERM or KILL (default TERM)")
      ->check(CLI::IsMember({"TERM", "KILL"}));
  signal->callback([f, ctx] { ctx->status = RunTaskSignal(*f); });

  SetupTaskSlurm(sub, f, ctx);
  SetupTaskSpark(sub, f, ctx);
  SetupTaskKeys(sub, ctx);

  CLI::App* check = sub->add_subcommand(
      "check-data",
      "Check from this host that the job's s3:// records can be listed and "
      "their first shard read, and its s3:// output_dir listed (an SSH "
      "run's preflight on each host)");
  check->add_option("--job", f->job, "The job file")->required();
  check->add_option("--set", f->sets,
                    "section.key=value over the job file (repeatable)");
  check->add_option("--s3-credentials", f->s3_credentials,
                    "The run's S3 settings and credentials (0600)");
  check->callback([f, ctx] { ctx->status = RunCheckData(*f); });

  CLI::App* fetch = sub->add_subcommand(
      "shard-fetch",
      "Print the scored shard SHARD and its index as one stream (what dtf "
      "predict runs in a Kubernetes pod to bring the shard back)");
  fetch
      ->add_option("shard", f->shard,
                   "The shard's output (--output of dtf "
                   "predict --shard)")
      ->required();
  fetch->callback([f, ctx] { ctx->status = RunShardFetch(f->shard); });
  CLI::App* release = sub->add_subcommand(
      "shard-release",
      "Mark the shard SHARD fetched: the dtf predict --hold-for-fetch "
      "holding it ends");
  release->add_option("shard", f->shard, "The shard's output")->required();
  release->callback([f, ctx] { ctx->status = RunShardRelease(f->shard); });
}

}  // namespace dtf::cli
