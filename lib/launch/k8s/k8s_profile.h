// The [kubernetes] table of a profile with backend = "kubernetes"
// (docs/launch.md, "Kubernetes"): the image, namespace, resources and
// scheduling of the run's pods, and the flavour of the manifests rendered.
// Every error is InvalidArgument "<file>:<line>:<col>: <key>: what is
// wrong".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/profile.h"

namespace dtf::toml_util {
class Reader;
struct Table;
}  // namespace dtf::toml_util

namespace dtf::launch::k8s {

enum class Flavour {
  kJob,    // an Indexed Job and a headless Service (batch/v1)
  kTfJob,  // a Kubeflow TFJob (kubeflow.org/v1)
};

// Requests or limits of one container; "" or 0: not set.
struct Resources {
  std::string cpu;     // a Kubernetes quantity: "2", "500m"
  std::string memory;  // "4Gi", "512M"
  int gpu = 0;         // nvidia.com/gpu
};

struct RoleResources {
  Resources requests;
  Resources limits;
};

struct Toleration {
  std::string key;
  std::string op = "Equal";  // "Equal" or "Exists"
  std::string value;
  std::string effect;  // "", "NoSchedule", "PreferNoSchedule", "NoExecute"
};

// Where the job's data comes from, mounted read-only at mount_path in
// every pod.
struct DataVolume {
  enum class Kind { kNone, kPvc, kHostPath, kImage };
  Kind kind = Kind::kNone;
  std::string source;  // the claim, the node's path, or the image
  std::string mount_path = "/data";
};

struct KubernetesProfile {
  // The namespace of every object. Default "default".
  std::string ns = "default";
  // The image the pods run (dtf pack image, pushed). Required.
  std::string image;
  Flavour flavour = Flavour::kJob;
  // The port every task listens on in its pod. Default 2222.
  int port = 2222;
  // The cluster's DNS domain, for the pods' names. Default "cluster.local".
  std::string cluster_domain = "cluster.local";
  RoleResources ps;
  RoleResources worker;
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::string service_account;
  std::string image_pull_secret;
  DataVolume data;
  // Where the run writes (kind kNone: nowhere that outlives the pods): a
  // PVC (ReadWriteMany, since every pod mounts it) or a node's path,
  // mounted writable at mount_path (default "/out") in every pod. The job's
  // train.output_dir belongs there: its checkpoints let a replaced pod go
  // on (every task runs with --restore), and its model outlives the run.
  DataVolume output;
  // The pods' job directory: dtf.toml is mounted there, in a writable
  // emptyDir, so the job's relative paths (output_dir, records) resolve
  // under it. Default "/job".
  std::string job_dir = "/job";
  // Each pod first runs `dtf gen-records` on the job (an init container
  // writing into the job directory), for jobs whose records are not on the
  // data volume. Default false.
  bool gen_records = false;
  // kubectl's context; "" (the default): the current context.
  std::string context;
  // "<file>:<line>:<col>" of each key read ("kubernetes.image").
  std::map<std::string, std::string> where;
};

// Checks the top-level keys of a backend = "kubernetes" profile: those of
// other backends (host, hosts, base_port, gpus, ...) are refused, naming the
// key to use instead where there is one.
Status CheckKubernetesProfileKeys(const toml_util::Reader& reader,
                                  const toml_util::Table& profile);

// Reads the [kubernetes] table of `profile`; its image is required.
StatusOr<KubernetesProfile> ReadKubernetesProfile(
    const toml_util::Reader& reader, const toml_util::Table& profile);

// Whether `text` is a Kubernetes resource quantity ("2", "0.5", "500m",
// "4Gi", "1e3").
bool IsQuantity(std::string_view text);

// Whether `text` is a DNS-1123 label (lowercase alphanumerics and '-', at
// most 63, starting and ending alphanumeric).
bool IsDnsLabel(std::string_view text);

// The [kubernetes] table of `profile` (Profile::table, read by the backend's
// ProfileTable); the defaults for a profile of another backend.
const KubernetesProfile& KubernetesTableOf(const Profile& profile);
// The same to fill in, made with the defaults when the profile has none.
KubernetesProfile& MutableKubernetesTable(Profile* profile);

}  // namespace dtf::launch::k8s
