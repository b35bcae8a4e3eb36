// dtf doctor: the preflight of an SSH profile, on its own — every host
// checked at once, one row per host, failures first with what to do; for a
// local profile, the GPUs this machine shows against the plan's.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/remote_preflight.h"
#include "cmd/run_common.h"
#include "cmd/task_storage.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/data/json.h"
#include "lib/kernels/context.h"
#include "lib/launch/backend_checks.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/scheduler_checks.h"
#include "lib/launch/ssh/data_preflight.h"
#include "lib/launch/ssh/preflight.h"
#include "lib/launch/ssh/ssh_backend.h"

namespace dtf::cli {
namespace {

struct DoctorFlags {
  RunsFlags runs;
  ProfileFlags profile;
  bool accept_new_host_keys = false;
  double timeout = 20;
  bool json = false;
};

void JsonField(std::string* out, std::string_view key, std::string_view value,
               bool last = false) {
  StrAppend(out, "\"", key, "\": ");
  AppendJsonString(value, out);
  if (!last) *out += ", ";
}

// A local profile: the GPUs this machine shows, against the GPUs the plan
// gives its CUDA workers.
Status LocalDoctor(const launch::Plan& plan, bool json) {
  std::string out =
      StrCat("profile ", plan.profile_name, " (", plan.profile_source,
             "): backend local, every task runs on this machine; nothing "
             "to check over SSH\n");
  StatusOr<std::vector<kernels::CudaDeviceInfo>> devices =
      kernels::CudaDevices();
  const size_t seen = devices.ok() ? devices->size() : 0;
  if (!devices.ok()) {
    StrAppend(&out, "GPUs: none (", Message(devices.status()), ")\n");
  } else {
    StrAppend(&out, "GPUs: ", seen, "\n");
    for (const kernels::CudaDeviceInfo& d : *devices) {
      StrAppend(&out, "  cuda:", d.ordinal, "  ", d.name, "  ",
                d.memory_bytes >> 30, " GiB  compute ", d.compute_major, ".",
                d.compute_minor, "\n");
    }
  }
  std::string missing;
  for (const launch::TaskPlan& t : plan.tasks) {
    for (const auto& [name, value] : t.env) {
      if (name == "CUDA_VISIBLE_DEVICES" && std::stoul(value) >= seen) {
        StrAppend(&missing, missing.empty() ? "" : ", ", t.name(), " gets GPU ",
                  value);
      }
    }
  }
  if (json) {
    out = "{";
    JsonField(&out, "profile", plan.profile_name);
    JsonField(&out, "profile_source", plan.profile_source);
    JsonField(&out, "backend", "local");
    StrAppend(&out, "\"ok\": ", missing.empty() ? "true" : "false",
              ", \"gpus\": [");
    if (devices.ok()) {
      for (const kernels::CudaDeviceInfo& d : *devices) {
        StrAppend(&out, &d == &devices->front() ? "" : ", ",
                  "{\"ordinal\": ", d.ordinal, ", ");
        JsonField(&out, "name", d.name);
        StrAppend(&out, "\"memory_bytes\": ", d.memory_bytes,
                  ", \"compute\": \"", d.compute_major, ".", d.compute_minor,
                  "\"}");
      }
    }
    out += "], ";
    JsonField(&out, "gpu_error", devices.ok() ? "" : Message(devices.status()));
    JsonField(&out, "missing_gpus", missing, /*last=*/true);
    out += "}\n";
  }
  DTF_RETURN_IF_ERROR(PrintStdout(out));
  if (missing.empty()) return OkStatus();
  return FailedPreconditionError(
      StrCat("doctor: the plan puts CUDA workers on GPUs this machine does "
             "not show (",
             missing, "; it shows ", seen,
             "): lower --workers or the profile's gpus, or set device = "
             "\"cpu\""));
}

// A profile whose tasks a batch system places (Slurm: its partitions and
// limits; Spark: spark-submit and the master), and the runs directory:
// `checks` made from here, printed as rows. `engine` names the system in
// what is printed ("Slurm").
Status ChecksDoctor(const launch::Plan& plan,
                    const std::vector<launch::BackendCheck>& checks,
                    std::string_view engine, bool json) {
  size_t failed = 0;
  for (const launch::BackendCheck& c : checks) failed += c.ok ? 0 : 1;
  std::string out;
  if (json) {
    out = "{";
    JsonField(&out, "profile", plan.profile_name);
    JsonField(&out, "profile_source", plan.profile_source);
    JsonField(&out, "backend", launch::BackendName(plan.backend));
    StrAppend(&out, "\"ok\": ", failed == 0 ? "true" : "false",
              ", \"checks\": [");
    for (const launch::BackendCheck& c : checks) {
      StrAppend(&out, &c == &checks.front() ? "" : ", ", "{");
      JsonField(&out, "check", c.check);
      StrAppend(&out, "\"ok\": ", c.ok ? "true" : "false", ", ");
      JsonField(&out, "detail", c.detail, /*last=*/true);
      out += "}";
    }
    out += "]}\n";
  } else {
    out = launch::BackendCheckTable(checks);
    StrAppend(&out, failed == 0 ? StrCat(engine, " profile ready\n")
                                : StrCat(failed, " of ", checks.size(),
                                         " checks failed\n"));
  }
  DTF_RETURN_IF_ERROR(PrintStdout(out));
  if (failed == 0) return OkStatus();
  return FailedPreconditionError(StrCat("doctor: ", failed, " of ",
                                        checks.size(), " ", engine,
                                        " checks failed"));
}

// A profile with an [s3] table: the launcher's S3 credentials, and the
// job's data and output in their bucket as this machine reaches them (the
// endpoint answers, the bucket can be listed, the first shard read).
std::vector<launch::BackendCheck> S3Checks(const launch::PlanRequest& r) {
  const launch::Profile& profile = r.profile;
  if (!profile.s3.present) return {};
  launch::BackendCheck creds{"s3_credentials", false, ""};
  launch::BackendCheck data{"s3_data", false, ""};
  StatusOr<S3Options> options = LauncherS3Options(
      profile, [](const char* name) { return std::getenv(name); });
  if (!options.ok()) {
    creds.detail = std::string(Message(options.status()));
    data.detail = "not checked (no S3 settings)";
    return {creds, data};
  }
  const std::string endpoint =
      options->endpoint.empty() ? std::string("AWS") : options->endpoint;
  if (!profile.s3.pass_credentials) {
    creds.ok = true;
    creds.detail = "s3.credentials = \"tasks\": each task uses its own";
  } else if (options->access_key_id.empty()) {
    creds.detail =
        StrCat("none found for ", endpoint,
               " (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or "
               "s3.profile with ~/.aws/credentials)");
  } else {
    creds.ok = true;
    creds.detail =
        StrCat("access key ", options->access_key_id.substr(0, 4), "... for ",
               endpoint, " (region ", options->region, ")");
  }
  ConfigureStorage(*options);
  StatusOr<JobFile> job = LoadJobFile(r.job, r.overrides.sets);
  if (!job.ok()) {
    data.detail = std::string(Message(job.status()));
  } else if (!IsRemotePath(job->data.records_dir) &&
             !IsRemotePath(job->train.output_dir)) {
    data.ok = true;
    data.detail = "the job's records and output_dir are not in a bucket";
  } else if (Status s = CheckRemoteData(r.job, r.overrides.sets); !s.ok()) {
    data.detail = std::string(Message(s));
  } else {
    data.ok = true;
    data.detail = StrCat(
        "readable from here: ",
        IsRemotePath(job->data.records_dir) ? job->data.records_dir : "",
        IsRemotePath(job->data.records_dir) &&
                IsRemotePath(job->train.output_dir)
            ? ", "
            : "",
        IsRemotePath(job->train.output_dir) ? job->train.output_dir : "");
  }
  return {creds, data};
}

// `checks` with the S3 rows of `r` after them.
std::vector<launch::BackendCheck> WithS3(
    std::vector<launch::BackendCheck> checks, const launch::PlanRequest& r) {
  for (launch::BackendCheck& c : S3Checks(r)) checks.push_back(std::move(c));
  return checks;
}

Status RunDoctor(const DoctorFlags& f) {
  DTF_ASSIGN_OR_RETURN(const launch::PlanRequest r,
                       PlanRequestFor(f.runs, f.profile));
  DTF_ASSIGN_OR_RETURN(const launch::Plan plan, launch::MakePlan(r));
  std::string out;
  // The checks follow where the backend runs the tasks: on this machine,
  // on hosts of their own (SSH), or where a batch system places them.
  const launch::PlanHooks& hooks = plan.hooks();
  if (hooks.TasksHere()) return LocalDoctor(plan, f.json);
  if (std::optional<launch::SchedulerChecks> c = launch::CheckScheduler(plan)) {
    return ChecksDoctor(plan, WithS3(std::move(c->checks), r), c->scheduler,
                        f.json);
  }
  DTF_ASSIGN_OR_RETURN(launch::PreflightOptions options,
                       launch::RuntimeNeeds());
  options.accept_new_host_keys = f.accept_new_host_keys;
  options.probe_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(f.timeout * 1000));
  launch::PreflightResult result = launch::Preflight(plan, options);
  // The data check needs the job archive's id, as the launch would ship it.
  DTF_ASSIGN_OR_RETURN(const pack::PackResult job, launch::PackJobArchive(r));
  DTF_RETURN_IF_ERROR(launch::CheckJobData(plan, job, &result));
  size_t failed = 0;
  for (const launch::HostRow& row : result.rows) failed += row.ok ? 0 : 1;
  if (f.json) {
    out = "{";
    JsonField(&out, "profile", plan.profile_name);
    JsonField(&out, "profile_source", plan.profile_source);
    JsonField(&out, "backend", "ssh");
    StrAppend(&out, "\"ok\": ", failed == 0 ? "true" : "false",
              ", \"hosts\": [");
    for (const launch::HostRow& row : result.rows) {
      StrAppend(&out, &row == &result.rows.front() ? "" : ", ", "{");
      JsonField(&out, "host", row.host);
      JsonField(&out, "label", row.label);
      StrAppend(&out, "\"ok\": ", row.ok ? "true" : "false", ", ");
      JsonField(&out, "ssh", row.ssh);
      JsonField(&out, "arch", row.arch);
      JsonField(&out, "glibc", row.glibc);
      JsonField(&out, "disk", row.disk);
      JsonField(&out, "ports", row.ports);
      JsonField(&out, "gpus", row.gpus);
      JsonField(&out, "clock", row.clock);
      JsonField(&out, "data", row.data);
      JsonField(&out, "problem", row.problem);
      JsonField(&out, "fix", row.fix, /*last=*/true);
      out += "}";
    }
    out += "]}\n";
  } else {
    out = launch::PreflightTable(result);
    StrAppend(&out, failed == 0
                        ? StrCat("all ", result.rows.size(), " hosts ready\n")
                        : StrCat(failed, " of ", result.rows.size(),
                                 " hosts not ready\n"));
  }
  DTF_RETURN_IF_ERROR(PrintStdout(out));
  if (failed == 0) return OkStatus();
  return FailedPreconditionError(StrCat("doctor: ", failed, " of ",
                                        result.rows.size(),
                                        " hosts failed the preflight"));
}

}  // namespace

void SetupDoctor(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<DoctorFlags>();
  CLI::App* sub = app->add_subcommand(
      "doctor",
      "Check every host of a profile at once (SSH, host key, architecture, "
      "glibc, disk, ports, GPUs, clock): one row per host, failures first "
      "with what to do");
  AddRunsFlags(sub, &f->runs);
  AddProfileFlags(sub, &f->profile);
  sub->add_flag("--accept-new-host-keys", f->accept_new_host_keys,
                "Record the host key of a host known_hosts does not have yet");
  sub->add_option("--timeout", f->timeout,
                  "Seconds each host's checks may take once connected "
                  "(default 20)")
      ->check(NumberBetween(1, 600));
  sub->add_flag("--json", f->json,
                "Print the result as one JSON object (see dtf-doctor(1))");
  sub->callback([f, ctx] { ctx->status = RunDoctor(*f); });
}

}  // namespace dtf::cli
