#include "lib/launch/k8s/predict_manifests.h"

#include "lib/base/strings.h"
#include "lib/launch/k8s/manifest_parts.h"

namespace dtf::launch::k8s {
namespace {

StatusOr<Manifest> ModelConfigMap(const PredictRenderRequest& r,
                                  const std::string& name) {
  size_t bytes = 0;
  Manifest data = Manifest::object();
  for (const auto& [file, contents] : r.model_files) {
    if (!IsObjectKey(file)) {
      return InvalidArgumentError(StrCat(
          "kubernetes: the model's file \"", file,
          "\" cannot be a key of a ConfigMap (letters, digits, '-', '.', "
          "'_')"));
    }
    bytes += contents.size();
    data[file] = Base64(contents);
  }
  if (bytes > kMaxShippedModelBytes) {
    return InvalidArgumentError(StrCat(
        "kubernetes: the model's files are ", bytes, " bytes, more than the ",
        kMaxShippedModelBytes,
        " a ConfigMap carries to the pods; put the model on the data volume "
        "(kubernetes.data",
        r.profile.data.kind == DataVolume::Kind::kNone
            ? std::string(", which this profile has not")
            : StrCat(", mounted at ", r.profile.data.mount_path),
        ") and pass --model as the pods see it"));
  }
  Manifest config;
  config["apiVersion"] = "v1";
  config["kind"] = "ConfigMap";
  config["metadata"] = RunMetadata(r.profile, r.run_id, name);
  config["binaryData"] = data;
  return config;
}

Manifest PredictPodSpec(const PredictRenderRequest& r,
                        const std::string& model_map) {
  Manifest c;
  c["name"] = kPredictContainer;
  c["image"] = r.profile.image;
  c["command"] = Manifest::array({"/usr/bin/dtf"});
  c["args"] = r.args;
  const Manifest env = EnvEntries(r.env);
  if (!env.empty()) c["env"] = env;
  const Manifest res = ContainerResources(r.profile.worker);
  if (!res.empty()) c["resources"] = res;
  Manifest mounts = Manifest::array();
  Manifest volumes = Manifest::array();
  Manifest work_mount;
  work_mount["name"] = "dtf-work";
  work_mount["mountPath"] = kPredictWorkDir;
  mounts.push_back(work_mount);
  Manifest work;
  work["name"] = "dtf-work";
  work["emptyDir"] = Manifest::object();
  volumes.push_back(work);
  if (!model_map.empty()) {
    Manifest model_mount;
    model_mount["name"] = "dtf-model";
    model_mount["mountPath"] = kModelMountDir;
    model_mount["readOnly"] = true;
    mounts.push_back(model_mount);
    Manifest model;
    model["name"] = "dtf-model";
    model["configMap"]["name"] = model_map;
    volumes.push_back(model);
  }
  if (r.profile.data.kind != DataVolume::Kind::kNone) {
    mounts.push_back(DataMountOf(r.profile));
    volumes.push_back(DataVolumeOf(r.profile));
  }
  c["volumeMounts"] = mounts;
  Manifest spec;
  spec["restartPolicy"] = "Never";
  AddPodScheduling(r.profile, &spec);
  spec["containers"] = Manifest::array({c});
  spec["volumes"] = volumes;
  return spec;
}

}  // namespace

StatusOr<std::vector<RenderedObject>> RenderPredictManifests(
    const PredictRenderRequest& r) {
  if (r.shards < 1 || r.shards > 10000) {
    return InvalidArgumentError(StrCat("kubernetes: ", r.shards,
                                       " shards: a run needs 1 to 10000 pods"));
  }
  const std::string name = ObjectName(r.run_id);
  // Pod names <name>-<index>-<suffix> are DNS labels too.
  if (!IsDnsLabel(StrCat(name, "-", r.shards, "-abcde"))) {
    return InvalidArgumentError(StrCat("kubernetes: run id ", r.run_id,
                                       " does not make a Kubernetes name (",
                                       name, ")"));
  }
  std::vector<RenderedObject> out;
  std::string model_map;
  if (!r.model_files.empty()) {
    model_map = StrCat(name, "-model");
    DTF_ASSIGN_OR_RETURN(const Manifest config, ModelConfigMap(r, model_map));
    out.push_back(ObjectOf("configmap.yaml", config));
  }
  Manifest job;
  job["apiVersion"] = "batch/v1";
  job["kind"] = "Job";
  job["metadata"] = RunMetadata(r.profile, r.run_id, name);
  Manifest& spec = job["spec"];
  spec["completionMode"] = "Indexed";
  spec["completions"] = r.shards;
  spec["parallelism"] = r.shards;
  spec["backoffLimitPerIndex"] = r.max_restarts;
  // A shard that fails for good fails the run: no merge could be made.
  spec["maxFailedIndexes"] = 0;
  spec["podReplacementPolicy"] = "Failed";
  // A run whose launcher is gone is not left in the cluster for ever.
  spec["ttlSecondsAfterFinished"] = 3600;
  spec["template"]["metadata"]["labels"] = RunLabels(r.run_id);
  spec["template"]["spec"] = PredictPodSpec(r, model_map);
  out.push_back(ObjectOf("job.yaml", job));
  return out;
}

}  // namespace dtf::launch::k8s
