// dtf serve: run one task (parameter server or worker) of a distributed run.
// The cluster comes from dtf's flags, TensorFlow's --cluster_spec string or
// the TF_CONFIG environment variable, in that order of precedence.
#include "lib/runtime/serve/serve.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/exit_code.h"
#include "cmd/flags.h"
#include "cmd/output_file.h"
#include "cmd/remote_output.h"
#include "cmd/task_storage.h"
#include "cmd/train_report.h"
#include "lib/base/decimal.h"
#include "lib/base/file.h"
#include "lib/base/memory_limit.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/data/job_file.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/cluster/cluster.h"
#include "lib/runtime/serve/serve_options.h"
#include "lib/runtime/train/allreduce_layout.h"

namespace dtf::cli {
namespace {

struct ServeFlags {
  std::string job = "dtf.toml";
  std::string role;
  int index = -1;
  std::string ps;
  std::string workers;
  std::string cluster_spec;
  std::string index_from_env;
  std::string run_id;
  std::string run_dir;
  std::string secret_file;
  std::string s3_credentials;
  std::string tls_dir;
  bool tls_task_names = false;
  std::string ready_file;
  int threads = 0;
  int started_workers = 0;
  std::vector<int> members;
  bool restore = false;
  std::vector<std::string> set;
  std::string metrics_out;
  bool quiet = false;
};

std::vector<std::string> Addresses(const std::vector<runtime::TaskAddress>& a) {
  std::vector<std::string> out;
  for (const auto& t : a) out.push_back(t.ToString());
  return out;
}

// --index-from-env VAR: the task whose place in the cluster's list of ps
// then workers VAR holds (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX).
StatusOr<TaskName> TaskFromIndexEnv(const ServeFlags& f,
                                    const runtime::ClusterSpec& c) {
  const char* value = std::getenv(f.index_from_env.c_str());
  const std::string flag = StrCat("--index-from-env ", f.index_from_env);
  if (value == nullptr) {
    return InvalidArgumentError(StrCat(flag, ": the variable is not set"));
  }
  return TaskAtIndex(flag, value, static_cast<int>(c.ps.size()),
                     static_cast<int>(c.workers.size()));
}

// The cluster and this task, from whichever source is given. TensorFlow's
// chief task becomes dtf's worker 0 (the workers after it).
Status ResolveCluster(const ServeFlags& f, runtime::ServeOptions* o) {
  runtime::ClusterSpec cluster;
  TaskName self;
  bool have_self = false;
  if (!f.ps.empty() || !f.workers.empty()) {
    DTF_ASSIGN_OR_RETURN(cluster.ps, runtime::ParseAddressList(f.ps));
    DTF_ASSIGN_OR_RETURN(cluster.workers, runtime::ParseAddressList(f.workers));
  } else if (!f.cluster_spec.empty()) {
    DTF_ASSIGN_OR_RETURN(cluster,
                         runtime::ParseClusterSpecString(f.cluster_spec));
  } else if (const char* tf_config = std::getenv("TF_CONFIG")) {
    DTF_ASSIGN_OR_RETURN(runtime::TfConfig config,
                         runtime::ParseTfConfig(tf_config));
    cluster = std::move(config.cluster);
    self = config.task;
    have_self = true;
  } else {
    return InvalidArgumentError(
        "no cluster: give --ps and --workers, --cluster_spec, or TF_CONFIG");
  }
  if (!f.index_from_env.empty()) {
    DTF_ASSIGN_OR_RETURN(self, TaskFromIndexEnv(f, cluster));
  } else if (!f.role.empty()) {
    DTF_ASSIGN_OR_RETURN(self.role, ParseRole(f.role));
    self.index = f.index < 0 ? 0 : f.index;
  } else if (!have_self) {
    return InvalidArgumentError("--role is required (or TF_CONFIG's task)");
  }
  if (f.index >= 0 && f.index_from_env.empty()) self.index = f.index;
  DTF_RETURN_IF_ERROR(runtime::ValidateCluster(cluster, self));
  if (self.role == Role::kEvaluator) {
    return InvalidArgumentError(
        "evaluator tasks are not run by dtf: the chief evaluates");
  }
  o->ps = Addresses(cluster.ps);
  o->workers = Addresses(cluster.chief);
  const int offset = static_cast<int>(cluster.chief.size());
  for (const std::string& w : Addresses(cluster.workers))
    o->workers.push_back(w);
  switch (self.role) {
    case Role::kPs:
      o->role = Role::kPs;
      o->index = self.index;
      break;
    case Role::kChief:
      o->role = Role::kWorker;
      o->index = 0;
      break;
    default:
      o->role = Role::kWorker;
      o->index = self.index + offset;
      break;
  }
  return OkStatus();
}

Status RunServe(const ServeFlags& f, Context* ctx) {
  runtime::ServeOptions o;
  DTF_RETURN_IF_ERROR(ResolveCluster(f, &o));
  if (f.secret_file.empty()) {
    return InvalidArgumentError(
        "--secret-file is required: every task of a run shares its secret");
  }
  DTF_ASSIGN_OR_RETURN(o.credentials.secret,
                       rpc::ReadSecretFile(f.secret_file));
  o.credentials.run_id = f.run_id;
  if (!f.tls_dir.empty()) {
    DTF_ASSIGN_OR_RETURN(o.credentials.tls,
                         rpc::ReadTlsDir(f.tls_dir, o.name().DirName()));
    o.credentials.tls.by_task_name = f.tls_task_names;
  } else if (f.tls_task_names) {
    return InvalidArgumentError("--tls-task-names needs --tls-dir");
  }
  // The run's S3 settings, before any s3:// path is opened (the job's
  // vocabularies, its output_dir's mirror).
  if (!f.s3_credentials.empty()) {
    DTF_RETURN_IF_ERROR(ConfigureStorageFromTaskFile(f.s3_credentials));
  }
  DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(f.job, f.set));
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<StorageMirror> mirror,
                       MirrorOutputDir(&job));
  if (o.ps.empty() && job.train.mode != TrainMode::kAllreduce) {
    return InvalidArgumentError(
        StrCat("the cluster has no ps tasks, which only mode = "
               "\"allreduce\" runs without; ",
               f.job, " has mode = \"", TrainModeName(job.train.mode), "\""));
  }
  o.ready_file = f.ready_file;
  o.threads = f.threads;
  o.restore = f.restore;
  if (f.started_workers > int(o.workers.size())) {
    return InvalidArgumentError(StrCat("--started-workers ", f.started_workers,
                                       ": the cluster has ", o.workers.size(),
                                       " workers"));
  }
  o.started_workers = f.started_workers;
  if (!f.members.empty()) {
    if (job.train.mode != TrainMode::kAllreduce) {
      return InvalidArgumentError(
          StrCat("--members ", runtime::MembersText(f.members),
                 ": for allreduce runs; ", f.job, " has mode = \"",
                 TrainModeName(job.train.mode), "\""));
    }
    if (o.role == Role::kWorker) {
      DTF_RETURN_IF_ERROR(
          runtime::LayoutAllreduce(o.index, int(o.workers.size()), f.members)
              .status());
    }
    o.members = f.members;
  }
  o.memory_limit = ReadMemoryLimit();
  // Tests only: a PS waits this long in each shard it saves
  // (StoreOptions::save_delay_ms).
  if (const char* delay = std::getenv("DTF_TEST_SAVE_SHARD_DELAY_MS")) {
    const std::string_view text(delay);
    if (!ParseDecimal(text, int64_t{3600} * 1000, &o.save_delay_ms)) {
      return InvalidArgumentError(
          StrCat("DTF_TEST_SAVE_SHARD_DELAY_MS=", text,
                 ": expected a number of milliseconds"));
    }
  }
  o.cancel = ctx->cancel;
  const Console& console = ctx->console;
  const std::string task = o.name().ToString();
  o.on_note = [&](std::string_view text) {
    if (!f.quiet) console.Info(text);
  };
  o.on_progress = [&](const runtime::TrainProgress& p) {
    if (!f.quiet) console.Info(ProgressLine(p));
  };
  o.on_eval = [&](const runtime::EvalReport& e) {
    if (!f.quiet) console.Info(EvalLine(e));
  };
  o.on_abandon = [&](const Status& why) {
    console.Error(why);
    std::fflush(nullptr);
    std::_Exit(ExitCodeFor(why));
  };
  StatusOr<runtime::TrainResult> served = runtime::Serve(job, o);
  DTF_RETURN_IF_ERROR(FinishOutputMirror(mirror.get(), served.status()));
  runtime::TrainResult r = std::move(*served);
  r.export_dir = RemoteName(mirror.get(), r.export_dir);
  r.checkpoint = RemoteName(mirror.get(), r.checkpoint);
  if (o.role == Role::kPs) return OkStatus();
  if (!f.metrics_out.empty() && o.index == 0) {
    DTF_RETURN_IF_ERROR(
        WriteOutput("--metrics-out", f.metrics_out, MetricsJson(r)));
  }
  std::string summary =
      fmt::format("{}: {} examples in {:.1f} s, {:.0f} examples/s", task,
                  r.examples, r.train_seconds, r.examples_per_sec);
  if (r.eval) {
    StrAppend(&summary, "; global step ", r.steps, "; ",
              FormatMetrics(r.eval->metrics), "\nmodel: ", r.export_dir);
  }
  if (const std::string best = BestLine(r); !best.empty()) {
    StrAppend(&summary, "\n", best);
  }
  if (r.steps_run > 0) {
    // Where a step's time went (milliseconds a step).
    const double per = 1e3 / double(r.steps_run);
    const runtime::StepTimes& t = r.step_times;
    StrAppend(&summary, "\n",
              fmt::format("{}: a step: pull {:.3f} ms, compute {:.3f} ms, "
                          "input {:.3f} ms, update {:.3f} ms ({} steps)",
                          task, t.pull * per, t.compute * per, t.input * per,
                          t.update * per, r.steps_run));
  }
  console.Info(summary);
  return OkStatus();
}

}  // namespace

void SetupServe(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app->add_subcommand(
      "serve",
      "Run one task of a distributed run: a parameter server or a worker "
      "(worker 0 is the chief)");
  sub->add_option("--job", f->job, "The job file (default: dtf.toml)");
  sub->add_option("--role,--job_name", f->role,
                  "ps, worker or chief (--job_name: TensorFlow's name)")
      ->check(CLI::IsMember({"ps", "worker", "chief", "evaluator"}));
  sub->add_option("--index,--task_index", f->index,
                  "This task's index in its role (--task_index: "
                  "TensorFlow's name)")
      ->check(IntAtLeast<int>(0));
  sub->add_option("--ps,--ps_hosts", f->ps,
                  "Parameter servers: host:port,host:port (--ps_hosts: "
                  "TensorFlow's name)");
  sub->add_option("--workers,--worker_hosts", f->workers,
                  "Workers: host:port,host:port (--worker_hosts: "
                  "TensorFlow's name)");
  sub->add_option("--cluster_spec", f->cluster_spec,
                  "TensorFlow's 'ps|h:p;h:p,worker|h:p;h:p' (instead of "
                  "--ps/--workers); without either, TF_CONFIG is read");
  auto* index_env = sub->add_option(
      "--index-from-env", f->index_from_env,
      "The name of a variable holding this task's place in --ps then "
      "--workers (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)");
  sub->get_option("--role")->excludes(index_env);
  sub->get_option("--index")->excludes(index_env);
  sub->add_option("--run-id", f->run_id, "The run's id")->required();
  sub->add_option("--run-dir", f->run_dir,
                  "The run's record directory (dtf launch passes it; "
                  "informational)");
  sub->add_option("--secret-file", f->secret_file,
                  "The run's secret (a 0600 file)");
  sub->add_option("--s3-credentials", f->s3_credentials,
                  "The run's S3 settings and credentials (a 0600 file of "
                  "NAME=value lines that dtf launch writes), read before any "
                  "s3:// path is opened");
  sub->add_option("--tls-dir", f->tls_dir,
                  "The run's TLS files: ca.pem, and this task's certificate "
                  "and key (ps-0.pem, ps-0.key, ...); every call is then "
                  "mutual TLS");
  sub->add_flag("--tls-task-names", f->tls_task_names,
                "Check each peer's certificate for its task name (ps-0, "
                "worker-0) instead of its host: for runs whose hosts are "
                "unknown when the certificates are made (Slurm, Kubernetes)");
  sub->add_option("--ready-file", f->ready_file,
                  "Written with host:port once the task listens");
  sub->add_option("--threads", f->threads,
                  "Compute threads (default: the job's train.threads; "
                  "0 there too: this host's CPUs shared among the run's "
                  "tasks on it)")
      ->check(IntAtLeast<int>(0));
  sub->add_option("--set", f->set,
                  "Override a job-file key: section.key=value (repeatable)");
  sub->add_option("--metrics-out", f->metrics_out,
                  "The chief writes the run's final metrics here as JSON");
  sub->add_option("--started-workers", f->started_workers,
                  "Workers from this index on are reserved slots that dtf "
                  "scale starts later: not waited for until they come "
                  "(default 0: every worker is started)")
      ->check(IntAtLeast<int>(0));
  sub->add_option("--members", f->members,
                  "An allreduce run restarted at another size: the worker "
                  "indexes taking part, comma-separated, ascending from 0 "
                  "(default: every worker started)")
      ->delimiter(',')
      ->check(IntAtLeast<int>(0));
  sub->add_flag("--restore", f->restore,
                "A restarted task, or every task of a resumed run: start "
                "from the run's own last checkpoint");
  sub->add_flag("--quiet", f->quiet, "Print only errors and the summary");
  sub->callback([f, ctx] { ctx->status = RunServe(*f, ctx); });
}

}  // namespace dtf::cli
