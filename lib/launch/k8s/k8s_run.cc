#include "lib/launch/k8s/k8s_run.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "lib/base/device_name.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/job_output.h"
#include "lib/launch/k8s/k8s_profile.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/manifests.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"

namespace dtf::launch::k8s {
namespace {

namespace fs = std::filesystem;

Status WriteObjects(const std::vector<RenderedObject>& objects,
                    const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (const RenderedObject& o : objects) {
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
StatusOr<std::vector<SecretFile>> TaskTlsSecretFiles(const std::string& run_id,
                                                     int ps, int workers,
                                                     bool placeholders) {
  std::vector<std::string> tasks;
  for (int i = 0; i < ps; ++i) {
    tasks.push_back(TaskDirName(Role::kPs, i));
  }
  for (int i = 0; i < workers; ++i) {
    tasks.push_back(TaskDirName(Role::kWorker, i));
  }
  RunTls tls;
  if (placeholders) {
    for (const std::string& t : tasks) tls.certs[t] = {};
  } else {
    DTF_ASSIGN_OR_RETURN(tls, MakeTaskNamedTls(run_id, tasks));
  }
  std::vector<SecretFile> files;
  for (TlsFile& f : TaskTlsFiles(tls)) {
    files.push_back({std::move(f.name), std::move(f.contents)});
  }
  return files;
}

}  // namespace

Status KubernetesProfileTable::Read(const toml_util::Reader& reader,
                                    const toml_util::Table& table,
                                    Profile* profile) const {
  DTF_RETURN_IF_ERROR(CheckKubernetesProfileKeys(reader, table));
  DTF_ASSIGN_OR_RETURN(MutableKubernetesTable(profile),
                       ReadKubernetesProfile(reader, table));
  return OkStatus();
}

Status KubernetesPlanHooks::CheckProfile(const Profile& profile) const {
  return FailedPreconditionError(StrCat(
      KeyWhere(profile, "backend"),
      ": backend = \"kubernetes\": the run is a set of manifests, not a "
      "plan of processes; dtf launch --dry-run prints them, --render DIR "
      "writes them"));
}

namespace {

// FailedPrecondition naming the profile's `key` (= `value`) and `why`
// unless its [kubernetes] flavour is "job".
Status NeedsJobFlavour(const Profile& profile, const char* key, int value,
                       std::string_view why) {
  if (KubernetesTableOf(profile).flavour == Flavour::kJob) return OkStatus();
  return FailedPreconditionError(
      StrCat(KeyWhere(profile, key), ": ", key, " = ", value, ": ", why));
}

// What the run record keeps of a training run: with worker slots to start
// (max_workers), the counts dtf scale needs.
RunRecordFacts RecordFactsOf(const RenderRequest& req, bool output_kept) {
  RunRecordFacts facts;
  facts.training = true;
  facts.output_kept = output_kept;
  if (req.started_workers > 0) {
    facts.ps = req.ps;
    facts.worker_slots = req.workers;
    facts.workers_started = req.started_workers;
  }
  return facts;
}

}  // namespace

StatusOr<std::string> HandOffKubernetesRun(const PlanRequest& r,
                                           const HandOffOptions& how) {
  const Profile& profile = r.profile;
  RenderRequest req;
  req.profile = KubernetesTableOf(profile);
  // An allreduce run has no parameter servers, as on every backend.
  req.ps = r.allreduce ? 0 : r.overrides.ps > 0 ? r.overrides.ps : profile.ps;
  req.workers = r.overrides.workers > 0 ? r.overrides.workers : profile.workers;
  req.threads = profile.threads;
  req.max_restarts = profile.max_restarts;
  DTF_RETURN_IF_ERROR(CheckMinWorkers(r, KubernetesPlanHooks()));
  if (profile.min_workers > 0) {
    DTF_RETURN_IF_ERROR(NeedsJobFlavour(
        profile, "min_workers", profile.min_workers,
        "elastic workers need flavour = \"job\" (an Indexed Job whose "
        "maxFailedIndexes lets worker indexes fail for good); a TFJob has no "
        "count of replicas that may fail"));
  }
  req.min_workers = profile.min_workers;
  // Workers added to the running Job (dtf scale patches its completions):
  // every slot's address and certificate are made now.
  DTF_RETURN_IF_ERROR(CheckMaxWorkers(r, KubernetesPlanHooks()));
  if (profile.max_workers > req.workers) {
    DTF_RETURN_IF_ERROR(NeedsJobFlavour(
        profile, "max_workers", profile.max_workers,
        "workers added to a running run need flavour = \"job\" (an elastic "
        "Indexed Job, whose completions dtf scale patches); a TFJob's "
        "replicas are fixed"));
    req.started_workers = req.workers;
    req.workers = profile.max_workers;
  }
  if (profile.device) req.device = DeviceNameString(*profile.device);
  req.sets = r.overrides.sets;
  req.env = profile.env;
  DTF_ASSIGN_OR_RETURN(req.job_text, ReadFileToString(r.job));
  if (r.run_id == kUnchosenRunId) {
    DTF_ASSIGN_OR_RETURN(req.run_id, NewRunId());
  } else {
    req.run_id = r.run_id;
  }
  if (!how.dry_run) {
    DTF_ASSIGN_OR_RETURN(req.secret, RandomHex(32));
  }
  // The tasks' S3 settings and credentials go into the run's Secret; a dry
  // run shows where, not what.
  req.s3 = !r.s3_credentials.empty();
  if (req.s3 && !how.dry_run) req.s3_credentials = r.s3_credentials;
  // On unless the profile turns it off: the pods talk across the cluster's
  // network. The hosts are the cluster's to choose, so each certificate
  // names its task (rpc::TlsMaterial::by_task_name).
  req.tls = profile.tls.value_or(true);
  if (req.tls) {
    DTF_ASSIGN_OR_RETURN(req.tls_files,
                         TaskTlsSecretFiles(req.run_id, req.ps, req.workers,
                                            /*placeholders=*/how.dry_run));
  } else if (!how.dry_run) {
    how.on_warning(TlsOffWarning(profile));
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<RenderedObject> objects,
                       RenderManifests(req));
  const std::string lost = LostOutputWarning(
      PodOutputDir(req.job_text, req.sets, KubernetesTableOf(profile)),
      KubernetesTableOf(profile));
  if (!lost.empty()) how.on_warning(lost);
  if (how.dry_run) return JoinDocuments(objects);
  if (!how.render_dir.empty()) {
    DTF_RETURN_IF_ERROR(WriteObjects(objects, how.render_dir));
    how.on_info(StrCat("dtf: run ", req.run_id, ": ", objects.size(),
                       " manifests written; apply them with\n  ",
                       ShellJoin(ApplyCommand(req.profile, how.render_dir))));
    return StrCat(how.render_dir, "\n");
  }
  DTF_RETURN_IF_ERROR(CheckCluster(req.profile));
  const std::string runs_dir =
      r.runs_dir.empty()
          ? DefaultRunsDir(fs::path(r.job).parent_path().string())
          : r.runs_dir;
  DTF_ASSIGN_OR_RETURN(const std::string id,
                       CreateRunDir(runs_dir, req.run_id));
  const std::string dir = StrCat(runs_dir, "/", id, "/kubernetes");
  DTF_RETURN_IF_ERROR(WriteObjects(objects, dir));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      StrCat(runs_dir, "/", id, "/", kRunRecordName),
      RunRecordJson(id, req.profile, RecordFactsOf(req, lost.empty()))));
  const std::vector<std::string> apply = ApplyCommand(req.profile, dir);
  const CommandResult applied = RunCommand(apply);
  if (applied.exit_code != 0) {
    return FailedPreconditionError(
        StrCat("kubernetes: ", ShellJoin(apply), " failed:\n", applied.output));
  }
  how.on_info(StrCat(
      applied.output, "dtf: run ", id, " applied; follow it with\n  ",
      ShellJoin(StatusCommand(req.profile, id)), "\n  ",
      ShellJoin(LogsCommand(req.profile, id, true)), "\nand stop it with\n  ",
      ShellJoin(DeleteCommand(req.profile, id)),
      "\n(dtf status, dtf logs and dtf stop ", id, " run them)"));
  return StrCat(id, "\n");
}

std::optional<Status> QueryKubernetesRun(const std::string& run_dir,
                                         EngineQuery what) {
  const std::string record = StrCat(run_dir, "/", kRunRecordName);
  std::error_code ec;
  if (!fs::exists(record, ec)) return std::nullopt;
  StatusOr<std::string> text = ReadFileToString(record);
  if (!text.ok()) return text.status();
  std::string id;
  StatusOr<KubernetesProfile> p = ParseRunRecord(*text, record, &id);
  if (!p.ok()) return p.status();
  std::vector<std::string> argv;
  switch (what) {
    case EngineQuery::kStatus:
      argv = StatusCommand(*p, id);
      break;
    case EngineQuery::kLogs:
    case EngineQuery::kLogsFollow:
      argv = LogsCommand(*p, id, what == EngineQuery::kLogsFollow);
      break;
    case EngineQuery::kStop:
      argv = DeleteCommand(*p, id);
      break;
  }
  std::fflush(nullptr);
  const int code = RunAttached(argv);
  if (code != 0) {
    return UnavailableError(StrCat("kubernetes: run ", id, ": ",
                                   ShellJoin(argv), " exited ", code));
  }
  return OkStatus();
}

}  // namespace dtf::launch::k8s
