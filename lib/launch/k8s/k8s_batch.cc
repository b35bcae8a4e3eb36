#include "lib/launch/k8s/k8s_batch.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/batch/shards.h"
#include "lib/launch/k8s/batch_collector.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/predict_manifests.h"
#include "lib/launch/run_id.h"

namespace dtf::launch::k8s {
namespace {

namespace fs = std::filesystem;

// How long a pod holds its shard for the launcher to fetch.
constexpr int kHoldSeconds = 1800;

bool OnDataVolume(const KubernetesProfile& p, const std::string& path) {
  if (p.data.kind == DataVolume::Kind::kNone) return false;
  const std::string& mount = p.data.mount_path;
  return path == mount || path.starts_with(StrCat(mount, "/"));
}

std::string WhereOf(const Profile& profile, const char* key) {
  const auto it = KubernetesTableOf(profile).where.find(key);
  return it != KubernetesTableOf(profile).where.end() ? it->second
                                                      : profile.source;
}

// The files of the job's directory for its ConfigMap.
StatusOr<std::map<std::string, std::string>> DirFiles(const BatchJob& job) {
  std::map<std::string, std::string> files;
  for (const std::string& name : job.dir_files) {
    DTF_ASSIGN_OR_RETURN(files[name],
                         ReadFileToString(StrCat(job.dir, "/", name)));
  }
  return files;
}

Status WriteManifests(const std::vector<RenderedObject>& objects,
                      const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (const RenderedObject& o : objects) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(StrCat(dir, "/", o.file), o.yaml));
  }
  return OkStatus();
}

class KubernetesBatchRunner : public BatchRunner {
 public:
  explicit KubernetesBatchRunner(Profile profile)
      : profile_(std::move(profile)) {}

  Status Run(const BatchJob& job, const BatchIo& io) override;

 private:
  // The pods read the input from the data volume, as they see it.
  Status CheckInputs(const BatchJob& job) const;
  // The Job's manifests, the job's directory checked (or shipped).
  StatusOr<PredictRenderRequest> Request(const BatchJob& job) const;
  // Applies the rendered run, collects its shards and merges them.
  Status Apply(const BatchJob& job, const PredictRenderRequest& req,
               const std::vector<RenderedObject>& objects,
               const BatchIo& io) const;

  const Profile profile_;
};

Status KubernetesBatchRunner::CheckInputs(const BatchJob& job) const {
  const KubernetesProfile& p = KubernetesTableOf(profile_);
  for (const std::string& input : job.inputs) {
    if (p.data.kind == DataVolume::Kind::kNone) {
      return FailedPreconditionError(
          StrCat(profile_.source, ": dtf ", job.title,
                 " on Kubernetes reads its input from the profile's "
                 "data volume, and it has none: set kubernetes.data (a pvc, "
                 "host_path or image) and give --input as the pods see it"));
    }
    if (!OnDataVolume(p, input)) {
      return InvalidArgumentError(StrCat(
          "--input ", input, ": not on the data volume, which the pods see at ",
          p.data.mount_path, " (", WhereOf(profile_, "kubernetes.data"),
          "); give the pattern as the pods see it, e.g. ", p.data.mount_path,
          "/eval/*.tfrecord"));
    }
  }
  return OkStatus();
}

StatusOr<PredictRenderRequest> KubernetesBatchRunner::Request(
    const BatchJob& job) const {
  const KubernetesProfile& p = KubernetesTableOf(profile_);
  const int w = job.shards;
  PredictRenderRequest req;
  req.profile = p;
  req.shards = w;
  req.max_restarts = profile_.max_restarts;
  req.env = profile_.env;
  std::string dir = job.dir;
  if (OnDataVolume(p, job.dir)) {
    // Read in the pods; checked here too where this machine sees it.
    std::error_code ec;
    if (fs::exists(job.dir, ec)) DTF_RETURN_IF_ERROR(job.check_dir());
  } else {
    // A directory the tasks would refuse stops here.
    DTF_RETURN_IF_ERROR(job.check_dir());
    DTF_ASSIGN_OR_RETURN(req.model_files, DirFiles(job));
    dir = kModelMountDir;
  }
  req.args = job.args(dir, job.inputs);
  req.args.insert(
      req.args.end(),
      {"--shard-from-env", kIndexEnv, "--of", std::to_string(w), "--output",
       PodShardPath(), "--hold-for-fetch", std::to_string(kHoldSeconds)});
  DTF_ASSIGN_OR_RETURN(req.run_id, NewRunId());
  return req;
}

Status KubernetesBatchRunner::Run(const BatchJob& job, const BatchIo& io) {
  const KubernetesProfile& p = KubernetesTableOf(profile_);
  DTF_RETURN_IF_ERROR(CheckInputs(job));
  DTF_ASSIGN_OR_RETURN(const PredictRenderRequest req, Request(job));
  DTF_ASSIGN_OR_RETURN(const std::vector<RenderedObject> objects,
                       RenderPredictManifests(req));
  if (!job.render_dir.empty()) {
    DTF_RETURN_IF_ERROR(WriteManifests(objects, job.render_dir));
    io.info(StrCat("dtf: ", job.title, ": run ", req.run_id, ": ",
                   objects.size(), " manifests written (", job.shards,
                   " shards); apply them with\n  ",
                   ShellJoin(ApplyCommand(p, job.render_dir))));
    return io.print(StrCat(job.render_dir, "\n"));
  }
  DTF_RETURN_IF_ERROR(CheckCluster(p));
  return Apply(job, req, objects, io);
}

Status KubernetesBatchRunner::Apply(const BatchJob& job,
                                    const PredictRenderRequest& req,
                                    const std::vector<RenderedObject>& objects,
                                    const BatchIo& io) const {
  const KubernetesProfile& p = KubernetesTableOf(profile_);
  const int w = job.shards;
  DTF_ASSIGN_OR_RETURN(const std::string id,
                       CreateRunDir(job.runs_dir, req.run_id));
  const std::string run_dir = StrCat(job.runs_dir, "/", id);
  const std::string dir = StrCat(run_dir, "/kubernetes");
  DTF_RETURN_IF_ERROR(WriteManifests(objects, dir));
  // dtf status, logs and stop find the run by its record; its objects are
  // the Job's kind (flavour "job").
  KubernetesProfile record = p;
  record.flavour = Flavour::kJob;
  RunRecordFacts facts;
  facts.training = false;
  DTF_RETURN_IF_ERROR(WriteFileAtomically(StrCat(run_dir, "/", kRunRecordName),
                                          RunRecordJson(id, record, facts)));
  const std::vector<std::string> remove = DeleteCommand(record, id);
  auto delete_run = [&] {
    const CommandResult d = RunCommand(remove);
    if (d.exit_code != 0) {
      io.warning(StrCat(
          "the run's objects may be left in the "
          "cluster (",
          ShellJoin(remove), " exited ", d.exit_code, ": ",
          TrimmedOutput(d.output), "); `dtf stop ", id, "` deletes them"));
    }
  };
  const std::vector<std::string> apply = ApplyCommand(p, dir);
  const CommandResult applied = RunCommand(apply);
  if (applied.exit_code != 0) {
    delete_run();
    return FailedPreconditionError(
        StrCat("kubernetes: ", ShellJoin(apply), " failed:\n", applied.output));
  }
  io.info(StrCat("dtf: ", job.title, ": run ", id, " (", run_dir, "), ", w,
                 " pod", w == 1 ? "" : "s", " in namespace ", p.ns,
                 "; Ctrl-C stops it and deletes them"));
  ShardCollector collector(profile_, id, job, io);
  StatusOr<std::vector<ShardOutput>> shards = collector.Collect();
  delete_run();
  if (!shards.ok()) return shards.status();
  DTF_ASSIGN_OR_RETURN(const int64_t num_files, ShardInputCount(*shards));
  DTF_ASSIGN_OR_RETURN(const std::string merged,
                       MergeShardOutputs(*shards, num_files, job.csv));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(job.output, merged));
  io.info(StrCat("dtf: ", job.title, ": merged ", w, " shard",
                 w == 1 ? "" : "s", " into ", job.output_name));
  return OkStatus();
}

}  // namespace

std::unique_ptr<BatchRunner> NewKubernetesBatchRunner(Profile profile) {
  return std::make_unique<KubernetesBatchRunner>(std::move(profile));
}

}  // namespace dtf::launch::k8s
