// The parts every dtf object in a cluster shares, whatever the run: its
// labels and metadata, a container's resources and environment, the data
// volume, where pods may be scheduled, and base64 for Secrets' and
// ConfigMaps' bytes. What lib/launch/k8s/manifests.h (training runs) and
// predict_manifests.h (scoring runs) build from.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "lib/launch/k8s/k8s_object.h"
#include "lib/launch/k8s/k8s_profile.h"
#include "lib/launch/k8s/yaml_writer.h"

namespace dtf::launch::k8s {

// app.kubernetes.io/name and managed-by "dtf", and kRunIdLabel.
Manifest RunLabels(const std::string& run_id);
// name, namespace and RunLabels.
Manifest RunMetadata(const KubernetesProfile& p, const std::string& run_id,
                     const std::string& name);

// requests and limits ({} when neither is set); a GPU is asked as a limit.
Manifest ContainerResources(const RoleResources& role);
// [{name, value}] in name order.
Manifest EnvEntries(const std::map<std::string, std::string>& env);

// The data volume "dtf-data" of p.data and its read-only mount at
// p.data.mount_path; null when the profile has none.
Manifest DataVolumeOf(const KubernetesProfile& p);
Manifest DataMountOf(const KubernetesProfile& p);
// The same of p.output, "dtf-output", mounted writable.
Manifest OutputVolumeOf(const KubernetesProfile& p);
Manifest OutputMountOf(const KubernetesProfile& p);

// serviceAccountName, imagePullSecrets, nodeSelector and tolerations of
// the profile, added to a pod's spec in that order.
void AddPodScheduling(const KubernetesProfile& p, Manifest* spec);

std::string Base64(std::string_view in);
// Whether `key` can name a file of a Secret or ConfigMap:
// [-._a-zA-Z0-9]+, at most 253 characters, not "." or "..".
bool IsObjectKey(std::string_view key);

// The object as written: file name, kind, name and YAML.
RenderedObject ObjectOf(std::string file, const Manifest& m);

}  // namespace dtf::launch::k8s
