#include "cmd/launch_k8s.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "cmd/cli_output.h"
#include "lib/base/device_name.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/job_output.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/manifests.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

Status WriteObjects(const std::vector<launch::k8s::RenderedObject>& objects,
                    const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (const launch::k8s::RenderedObject& o : objects) {
    const std::string path = StrCat(dir, "/", o.file);
    DTF_RETURN_IF_ERROR(WriteFileAtomically(path, o.yaml));
    // The Secret's file holds the run's secret.
    const mode_t mode = o.kind == "Secret" ? 0600 : 0644;
    if (::chmod(path.c_str(), mode) != 0) return ErrnoToStatus(errno, path);
  }
  return OkStatus();
}

// The Secret's TLS files of a run of `ps` and `workers` tasks: the CA's
// certificate and each task's certificate and key, made now; with
// `placeholders`, their names only (a dry run). The CA's key is dropped:
// nothing issues another certificate for the run.
StatusOr<std::vector<launch::k8s::SecretFile>> TaskTlsSecretFiles(
    const std::string& run_id, int ps, int workers, bool placeholders) {
  std::vector<std::string> tasks;
  for (int i = 0; i < ps; ++i) {
    tasks.push_back(launch::TaskDirName(launch::Role::kPs, i));
  }
  for (int i = 0; i < workers; ++i) {
    tasks.push_back(launch::TaskDirName(launch::Role::kWorker, i));
  }
  launch::RunTls tls;
  if (placeholders) {
    for (const std::string& t : tasks) tls.certs[t] = {};
  } else {
    DTF_ASSIGN_OR_RETURN(tls, launch::MakeTaskNamedTls(run_id, tasks));
  }
  std::vector<launch::k8s::SecretFile> files;
  for (launch::TlsFile& f : launch::TaskTlsFiles(tls)) {
    files.push_back({std::move(f.name), std::move(f.contents)});
  }
  return files;
}

}  // namespace

Status LaunchKubernetes(const launch::PlanRequest& r,
                        const KubernetesLaunch& how, Context* ctx) {
  const launch::Profile& profile = r.profile;
  launch::k8s::RenderRequest req;
  req.profile = profile.kubernetes;
  // An allreduce run has no parameter servers, as on every backend.
  req.ps = r.allreduce ? 0 : r.overrides.ps > 0 ? r.overrides.ps : profile.ps;
  req.workers = r.overrides.workers > 0 ? r.overrides.workers : profile.workers;
  req.threads = profile.threads;
  req.max_restarts = profile.max_restarts;
  if (profile.device) req.device = DeviceNameString(*profile.device);
  req.sets = r.overrides.sets;
  req.env = profile.env;
  DTF_ASSIGN_OR_RETURN(req.job_text, ReadFileToString(r.job));
  if (r.run_id == launch::kUnchosenRunId) {
    DTF_ASSIGN_OR_RETURN(req.run_id, launch::NewRunId());
  } else {
    req.run_id = r.run_id;
  }
  if (!how.dry_run) {
    DTF_ASSIGN_OR_RETURN(req.secret, launch::RandomHex(32));
  }
  // On unless the profile turns it off: the pods talk across the cluster's
  // network. The hosts are the cluster's to choose, so each certificate
  // names its task (rpc::TlsMaterial::by_task_name).
  req.tls = profile.tls.value_or(true);
  if (req.tls) {
    DTF_ASSIGN_OR_RETURN(req.tls_files,
                         TaskTlsSecretFiles(req.run_id, req.ps, req.workers,
                                            /*placeholders=*/how.dry_run));
  } else if (!how.dry_run) {
    ctx->console.Warning(launch::TlsOffWarning(profile));
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<launch::k8s::RenderedObject> objects,
                       launch::k8s::RenderManifests(req));
  const std::string lost = launch::k8s::LostOutputWarning(
      launch::k8s::PodOutputDir(req.job_text, req.sets, profile.kubernetes),
      profile.kubernetes);
  if (!lost.empty()) ctx->console.Warning(lost);
  if (how.dry_run) return PrintStdout(launch::k8s::JoinDocuments(objects));
  if (!how.render_dir.empty()) {
    DTF_RETURN_IF_ERROR(WriteObjects(objects, how.render_dir));
    ctx->console.Info(StrCat("dtf: run ", req.run_id, ": ", objects.size(),
                             " manifests written; apply them with\n  ",
                             launch::k8s::ShellJoin(launch::k8s::ApplyCommand(
                                 req.profile, how.render_dir))));
    return PrintStdout(StrCat(how.render_dir, "\n"));
  }
  DTF_RETURN_IF_ERROR(launch::k8s::CheckCluster(req.profile));
  const std::string runs_dir =
      r.runs_dir.empty()
          ? launch::DefaultRunsDir(fs::path(r.job).parent_path().string())
          : r.runs_dir;
  DTF_ASSIGN_OR_RETURN(const std::string id,
                       launch::CreateRunDir(runs_dir, req.run_id));
  const std::string dir = StrCat(runs_dir, "/", id, "/kubernetes");
  DTF_RETURN_IF_ERROR(WriteObjects(objects, dir));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      StrCat(runs_dir, "/", id, "/", launch::k8s::kRunRecordName),
      launch::k8s::RunRecordJson(id, req.profile)));
  const std::vector<std::string> apply =
      launch::k8s::ApplyCommand(req.profile, dir);
  const launch::k8s::CommandResult applied = launch::k8s::RunCommand(apply);
  if (applied.exit_code != 0) {
    return FailedPreconditionError(
        StrCat("kubernetes: ", launch::k8s::ShellJoin(apply), " failed:\n",
               applied.output));
  }
  ctx->console.Info(StrCat(
      applied.output, "dtf: run ", id, " applied; follow it with\n  ",
      launch::k8s::ShellJoin(launch::k8s::StatusCommand(req.profile, id)),
      "\n  ",
      launch::k8s::ShellJoin(launch::k8s::LogsCommand(req.profile, id, true)),
      "\nand stop it with\n  ",
      launch::k8s::ShellJoin(launch::k8s::DeleteCommand(req.profile, id)),
      "\n(dtf status, dtf logs and dtf stop ", id, " run them)"));
  return PrintStdout(StrCat(id, "\n"));
}

std::optional<Status> FollowKubernetesRun(const std::string& run_dir,
                                          KubernetesFollow what) {
  const std::string record = StrCat(run_dir, "/", launch::k8s::kRunRecordName);
  std::error_code ec;
  if (!fs::exists(record, ec)) return std::nullopt;
  StatusOr<std::string> text = ReadFileToString(record);
  if (!text.ok()) return text.status();
  std::string id;
  StatusOr<launch::k8s::KubernetesProfile> p =
      launch::k8s::ParseRunRecord(*text, record, &id);
  if (!p.ok()) return p.status();
  std::vector<std::string> argv;
  switch (what) {
    case KubernetesFollow::kStatus:
      argv = launch::k8s::StatusCommand(*p, id);
      break;
    case KubernetesFollow::kLogs:
    case KubernetesFollow::kLogsFollow:
      argv = launch::k8s::LogsCommand(*p, id,
                                      what == KubernetesFollow::kLogsFollow);
      break;
    case KubernetesFollow::kStop:
      argv = launch::k8s::DeleteCommand(*p, id);
      break;
  }
  std::fflush(nullptr);
  const int code = launch::k8s::RunAttached(argv);
  if (code != 0) {
    return UnavailableError(StrCat("kubernetes: run ", id, ": ",
                                   launch::k8s::ShellJoin(argv), " exited ",
                                   code));
  }
  return OkStatus();
}

}  // namespace dtf::cli
