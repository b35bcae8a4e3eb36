#include "lib/launch/k8s/manifests.h"

#include <algorithm>

#include "lib/base/strings.h"
#include "lib/launch/k8s/manifest_parts.h"
#include "lib/launch/k8s/yaml_writer.h"

namespace dtf::launch::k8s {
namespace {

constexpr char kJobFileName[] = "dtf.toml";
constexpr char kSecretKey[] = "secret";
constexpr char kS3Key[] = "s3-credentials";
constexpr char kPlaceholderSecret[] = "(generated when the run is applied)";
constexpr int kSecretMode = 0400;
// The run's Secret, as the keys init container mounts it.
constexpr char kRunSecretVolume[] = "dtf-run-secret";
constexpr char kRunSecretDir[] = "/etc/dtf/run";
// A TFJob pod's replica index (set by the operator), and the variable
// the keys init container reads it from.
constexpr char kReplicaIndexLabel[] = "training.kubeflow.org/replica-index";
constexpr char kReplicaIndexEnv[] = "DTF_REPLICA_INDEX";
// Kubernetes' limit on a Secret's data.
constexpr size_t kMaxSecretBytes = 1024 * 1024;

// The container's arguments common to both flavours.
std::vector<std::string> ServeArgs(const RenderRequest& r) {
  std::vector<std::string> args = {"serve", "--job",
                                   StrCat(r.profile.job_dir, "/", kJobFileName),
                                   "--run-id", r.run_id, "--secret-file",
                                   StrCat(kSecretMountDir, "/", kSecretKey),
                                   // A replaced pod goes on from the run's
                                   // last checkpoint, when its output_dir
                                   // kept one (kubernetes.output); a first
                                   // start finds none.
                                   "--restore"};
  if (r.tls) {
    args.push_back("--tls-dir");
    args.push_back(kSecretMountDir);
    args.push_back("--tls-task-names");
  }
  if (r.s3) {
    args.push_back("--s3-credentials");
    args.push_back(StrCat(kSecretMountDir, "/", kS3Key));
  }
  if (r.threads > 0) {
    args.push_back("--threads");
    args.push_back(std::to_string(r.threads));
  }
  if (r.started_workers > 0 && r.started_workers < r.workers) {
    args.push_back("--started-workers");
    args.push_back(std::to_string(r.started_workers));
  }
  if (!r.device.empty()) {
    args.push_back("--set");
    args.push_back(StrCat("train.device=\"", r.device, "\""));
  }
  for (const std::string& set : r.sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  return args;
}

Manifest Labels(const RenderRequest& r) { return RunLabels(r.run_id); }

Manifest Metadata(const RenderRequest& r, const std::string& name) {
  return RunMetadata(r.profile, r.run_id, name);
}

Manifest Volumes(const RenderRequest& r, const std::string& name) {
  Manifest volumes = Manifest::array();
  // The run's Secret, every task's key in it, is mounted into the keys
  // init container alone; the task's container gets its own keys in a
  // memory volume (PodSpec).
  Manifest run_secret;
  run_secret["name"] = kRunSecretVolume;
  run_secret["secret"]["secretName"] = StrCat(name, "-secret");
  run_secret["secret"]["defaultMode"] = kSecretMode;
  volumes.push_back(run_secret);
  Manifest secret;
  secret["name"] = "dtf-secret";
  secret["emptyDir"]["medium"] = "Memory";
  volumes.push_back(secret);
  Manifest job;
  job["name"] = "dtf-job";
  job["configMap"]["name"] = StrCat(name, "-job");
  volumes.push_back(job);
  Manifest work;
  work["name"] = "dtf-work";
  work["emptyDir"] = Manifest::object();
  volumes.push_back(work);
  if (r.profile.data.kind != DataVolume::Kind::kNone) {
    volumes.push_back(DataVolumeOf(r.profile));
  }
  if (r.profile.output.kind != DataVolume::Kind::kNone) {
    volumes.push_back(OutputVolumeOf(r.profile));
  }
  return volumes;
}

Manifest VolumeMounts(const RenderRequest& r) {
  Manifest mounts = Manifest::array();
  Manifest secret;
  secret["name"] = "dtf-secret";
  secret["mountPath"] = kSecretMountDir;
  secret["readOnly"] = true;
  mounts.push_back(secret);
  // The job directory is writable (the job's relative output and records
  // paths land there); the job file is mounted into it.
  Manifest work;
  work["name"] = "dtf-work";
  work["mountPath"] = r.profile.job_dir;
  mounts.push_back(work);
  Manifest job;
  job["name"] = "dtf-job";
  job["mountPath"] = StrCat(r.profile.job_dir, "/", kJobFileName);
  job["subPath"] = kJobFileName;
  job["readOnly"] = true;
  mounts.push_back(job);
  if (r.profile.data.kind != DataVolume::Kind::kNone) {
    mounts.push_back(DataMountOf(r.profile));
  }
  if (r.profile.output.kind != DataVolume::Kind::kNone) {
    mounts.push_back(OutputMountOf(r.profile));
  }
  return mounts;
}

Manifest Container(const RenderRequest& r, const std::string& container_name,
                   const std::vector<std::string>& args, const Manifest& env,
                   const RoleResources& resources) {
  Manifest c;
  c["name"] = container_name;
  c["image"] = r.profile.image;
  c["command"] = Manifest::array({"/usr/bin/dtf"});
  c["args"] = args;
  if (!env.empty()) c["env"] = env;
  Manifest port;
  port["name"] = container_name == "tensorflow" ? "tfjob-port" : "dtf";
  port["containerPort"] = r.profile.port;
  c["ports"] = Manifest::array({port});
  const Manifest res = ContainerResources(resources);
  if (!res.empty()) c["resources"] = res;
  c["volumeMounts"] = VolumeMounts(r);
  return c;
}

Manifest EnvList(const RenderRequest& r) { return EnvEntries(r.env); }

// The init container that copies the pod's own keys (dtf task keys) from
// the run's Secret into the memory volume the task's container mounts;
// `which` tells it its task.
Manifest KeysContainer(const RenderRequest& r,
                       const std::vector<std::string>& which,
                       const Manifest& env) {
  Manifest keys;
  keys["name"] = "dtf-keys";
  keys["image"] = r.profile.image;
  keys["command"] = Manifest::array({"/usr/bin/dtf"});
  std::vector<std::string> args = {"task",        "keys", "--from",
                                   kRunSecretDir, "--to", kSecretMountDir};
  args.insert(args.end(), which.begin(), which.end());
  keys["args"] = args;
  if (!env.empty()) keys["env"] = env;
  Manifest from;
  from["name"] = kRunSecretVolume;
  from["mountPath"] = kRunSecretDir;
  from["readOnly"] = true;
  Manifest to;
  to["name"] = "dtf-secret";
  to["mountPath"] = kSecretMountDir;
  keys["volumeMounts"] = Manifest::array({from, to});
  return keys;
}

Manifest PodSpec(const RenderRequest& r, const std::string& name,
                 Manifest containers, const std::string& restart_policy,
                 const Manifest& keys) {
  Manifest spec;
  spec["restartPolicy"] = restart_policy;
  // The pods call no Kubernetes API: no token of the service account's is
  // mounted, so a pod cannot read the run's Secret through the API either.
  spec["automountServiceAccountToken"] = false;
  AddPodScheduling(r.profile, &spec);
  spec["initContainers"] = Manifest::array({keys});
  if (r.profile.gen_records) {
    // The records the job reads, written into the pod's job directory
    // before the task starts (the same shards in every pod).
    Manifest init;
    init["name"] = "gen-records";
    init["image"] = r.profile.image;
    init["command"] = Manifest::array({"/usr/bin/dtf"});
    std::vector<std::string> args = {
        "gen-records", "--job", StrCat(r.profile.job_dir, "/", kJobFileName)};
    init["args"] = args;
    init["volumeMounts"] = VolumeMounts(r);
    spec["initContainers"].push_back(init);
  }
  spec["containers"] = std::move(containers);
  spec["volumes"] = Volumes(r, name);
  return spec;
}

// "host:port,host:port" of the Job's pods from `first` to `last`.
std::string PodAddresses(const RenderRequest& r, const std::string& name,
                         int first, int last) {
  std::string out;
  for (int i = first; i < last; ++i) {
    if (!out.empty()) out += ',';
    StrAppend(&out, name, "-", i, ".", name, ".", r.profile.ns, ".svc.",
              r.profile.cluster_domain, ":", r.profile.port);
  }
  return out;
}

void RenderJobFlavour(const RenderRequest& r, const std::string& name,
                      std::vector<RenderedObject>* out) {
  const int total = r.ps + r.workers;
  Manifest service;
  service["apiVersion"] = "v1";
  service["kind"] = "Service";
  service["metadata"] = Metadata(r, name);
  service["spec"]["clusterIP"] = "None";
  service["spec"]["publishNotReadyAddresses"] = true;
  service["spec"]["selector"][kRunIdLabel] = r.run_id;
  Manifest port;
  port["name"] = "dtf";
  port["port"] = r.profile.port;
  port["targetPort"] = r.profile.port;
  service["spec"]["ports"] = Manifest::array({port});
  out->push_back(ObjectOf("service.yaml", service));

  std::vector<std::string> args = ServeArgs(r);
  for (const std::string& a :
       {std::string("--ps"), PodAddresses(r, name, 0, r.ps),
        std::string("--workers"), PodAddresses(r, name, r.ps, total),
        std::string("--index-from-env"), std::string(kIndexEnv)}) {
    args.push_back(a);
  }
  // One pod template serves both roles (RenderManifests refuses PS
  // resources of their own).
  const RoleResources& res = r.profile.worker;
  Manifest job;
  job["apiVersion"] = "batch/v1";
  job["kind"] = "Job";
  job["metadata"] = Metadata(r, name);
  Manifest& spec = job["spec"];
  spec["completionMode"] = "Indexed";
  // With reserved slots (max_workers) the Job starts fewer indexes: an
  // elastic Indexed Job (completions = parallelism) that dtf scale patches.
  const int started =
      r.ps + (r.started_workers > 0 ? r.started_workers : r.workers);
  spec["completions"] = started;
  spec["parallelism"] = started;
  spec["backoffLimitPerIndex"] = r.max_restarts;
  // An index out of restarts fails the Job, and its controller stops the
  // other pods: a run is not left to finish without a task's share. With
  // elastic workers (min_workers), that many worker indexes may fail for
  // good first while the run goes on without them.
  spec["maxFailedIndexes"] =
      r.min_workers > 0 ? started - r.ps - r.min_workers : 0;
  spec["podReplacementPolicy"] = "Failed";
  // The run is done when the chief (index ps) is: the Job then succeeds
  // and its controller stops the pods still running (a worker stopped or
  // frozen, the parameter servers), and replaces none after.
  Manifest rule;
  rule["succeededIndexes"] = std::to_string(r.ps);
  spec["successPolicy"]["rules"] = Manifest::array({rule});
  spec["template"]["metadata"]["labels"] = Labels(r);
  Manifest pod = PodSpec(
      r, name, Manifest::array({Container(r, "dtf", args, EnvList(r), res)}),
      "Never",
      KeysContainer(
          r,
          {"--index-from-env", kIndexEnv, "--ps", std::to_string(r.ps),
           "--workers", std::to_string(r.workers)},
          Manifest::array()));
  // Each pod is <name>-<index>.<service>: what PodAddresses names.
  Manifest with_subdomain;
  with_subdomain["subdomain"] = name;
  for (auto it = pod.begin(); it != pod.end(); ++it) {
    with_subdomain[it.key()] = it.value();
  }
  spec["template"]["spec"] = with_subdomain;
  out->push_back(ObjectOf("job.yaml", job));
}

void RenderTfJobFlavour(const RenderRequest& r, const std::string& name,
                        std::vector<RenderedObject>* out) {
  Manifest tfjob;
  tfjob["apiVersion"] = "kubeflow.org/v1";
  tfjob["kind"] = "TFJob";
  tfjob["metadata"] = Metadata(r, name);
  Manifest& spec = tfjob["spec"];
  spec["runPolicy"]["cleanPodPolicy"] = "Running";
  spec["runPolicy"]["backoffLimit"] = r.max_restarts;
  Manifest& replicas = spec["tfReplicaSpecs"];
  // The keys init container learns its replica's index from the label
  // the operator puts on each pod (TF_CONFIG is the task container's).
  Manifest index_env;
  index_env["name"] = kReplicaIndexEnv;
  index_env["valueFrom"]["fieldRef"]["fieldPath"] =
      StrCat("metadata.labels['", kReplicaIndexLabel, "']");
  auto replica = [&](const char* type, int count, const RoleResources& res,
                     const std::vector<std::string>& which) {
    Manifest rs;
    rs["replicas"] = count;
    rs["restartPolicy"] = "ExitCode";
    rs["template"]["metadata"]["labels"] = Labels(r);
    rs["template"]["spec"] = PodSpec(
        r, name,
        Manifest::array(
            {Container(r, "tensorflow", ServeArgs(r), EnvList(r), res)}),
        "Never",
        KeysContainer(r, which,
                      which.front() == "--index-from-env"
                          ? Manifest::array({index_env})
                          : Manifest::array()));
    // TFJob sets the pods' restartPolicy from the replica's; the template
    // leaves it out.
    rs["template"]["spec"].erase("restartPolicy");
    replicas[type] = rs;
  };
  // dtf's worker 0 is TensorFlow's chief; the other workers follow it.
  replica("Chief", 1, r.profile.worker, {"--task", "worker:0"});
  replica("PS", r.ps, r.profile.ps,
          {"--index-from-env", kReplicaIndexEnv, "--role", "ps"});
  if (r.workers > 1) {
    replica("Worker", r.workers - 1, r.profile.worker,
            {"--index-from-env", kReplicaIndexEnv, "--role", "worker",
             "--index-offset", "1"});
  }
  out->push_back(ObjectOf("tfjob.yaml", tfjob));
}

}  // namespace

std::string ObjectName(const std::string& run_id) {
  std::string name = StrCat("dtf-", run_id);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '-';
  }
  return name;
}

StatusOr<std::vector<RenderedObject>> RenderManifests(const RenderRequest& r) {
  if (r.ps < 0 || r.workers < 1 || r.ps + r.workers > 10000) {
    return InvalidArgumentError(
        StrCat("kubernetes: ", r.ps, " ps and ", r.workers,
               " workers: a run needs a worker and at most 10000 tasks"));
  }
  const std::string name = ObjectName(r.run_id);
  // Pod names <name>-<index> are DNS labels too.
  if (!IsDnsLabel(StrCat(name, "-", r.ps + r.workers))) {
    return InvalidArgumentError(StrCat("kubernetes: run id ", r.run_id,
                                       " does not make a Kubernetes name (",
                                       name, ")"));
  }
  if (r.profile.job_dir.empty() || r.profile.job_dir[0] != '/') {
    return InvalidArgumentError(StrCat("kubernetes: job directory ",
                                       r.profile.job_dir, " is not absolute"));
  }
  const RoleResources& ps = r.profile.ps;
  if (r.profile.flavour == Flavour::kJob &&
      (!ps.requests.cpu.empty() || !ps.requests.memory.empty() ||
       ps.requests.gpu != 0 || !ps.limits.cpu.empty() ||
       !ps.limits.memory.empty() || ps.limits.gpu != 0)) {
    const auto where = r.profile.where.lower_bound("kubernetes.ps.");
    return InvalidArgumentError(StrCat(
        where != r.profile.where.end() ? where->second : "kubernetes.ps",
        ": kubernetes.ps: flavour = \"job\" runs every task from one pod "
        "template, with kubernetes.worker's resources; set those, or "
        "flavour = \"tfjob\" for resources per role"));
  }
  std::vector<RenderedObject> out;
  Manifest secret;
  secret["apiVersion"] = "v1";
  secret["kind"] = "Secret";
  secret["metadata"] = Metadata(r, StrCat(name, "-secret"));
  secret["type"] = "Opaque";
  Manifest data = Manifest::object();
  Manifest string_data = Manifest::object();
  size_t secret_bytes = r.secret.size();
  if (r.secret.empty()) {
    string_data[kSecretKey] = kPlaceholderSecret;
  } else {
    data[kSecretKey] = Base64(r.secret);
  }
  if (r.tls) {
    for (const SecretFile& f : r.tls_files) {
      if (f.name == kSecretKey || f.name == kS3Key || !IsObjectKey(f.name)) {
        return InvalidArgumentError(StrCat("kubernetes: \"", f.name,
                                           "\" cannot be a key of the "
                                           "run's Secret"));
      }
      secret_bytes += f.contents.size();
      if (f.contents.empty()) {
        string_data[f.name] = kPlaceholderSecret;
      } else {
        data[f.name] = Base64(f.contents);
      }
    }
  }
  if (r.s3) {
    secret_bytes += r.s3_credentials.size();
    if (r.s3_credentials.empty()) {
      string_data[kS3Key] = kPlaceholderSecret;
    } else {
      data[kS3Key] = Base64(r.s3_credentials);
    }
  }
  if (secret_bytes > kMaxSecretBytes) {
    return InvalidArgumentError(StrCat(
        "kubernetes: the run's Secret would hold ", secret_bytes,
        " bytes (its secret and ", r.ps + r.workers,
        " tasks' certificates and keys), more than the ", kMaxSecretBytes,
        " a Secret may; run fewer tasks, or tls = false"));
  }
  if (!data.empty()) secret["data"] = data;
  if (!string_data.empty()) secret["stringData"] = string_data;
  out.push_back(ObjectOf("secret.yaml", secret));

  Manifest config;
  config["apiVersion"] = "v1";
  config["kind"] = "ConfigMap";
  config["metadata"] = Metadata(r, StrCat(name, "-job"));
  config["data"][kJobFileName] = r.job_text;
  out.push_back(ObjectOf("configmap.yaml", config));

  if (r.profile.flavour == Flavour::kJob) {
    RenderJobFlavour(r, name, &out);
  } else {
    RenderTfJobFlavour(r, name, &out);
  }
  return out;
}

std::string JoinDocuments(const std::vector<RenderedObject>& objects) {
  std::string out;
  for (const RenderedObject& o : objects) {
    StrAppend(&out, "---\n", o.yaml);
  }
  return out;
}

}  // namespace dtf::launch::k8s
