// What every dtf object in a cluster is known by, whichever run renders it:
// the labels and mount points objects share, and an object as written
// (file, kind, name, YAML). Plain values; lib/launch/k8s/manifests.h,
// manifest_parts.h and predict_manifests.h build on them.
#pragma once

#include <string>

namespace dtf::launch::k8s {

inline constexpr char kRunIdLabel[] = "dtf.dev/run-id";
inline constexpr char kSecretMountDir[] = "/etc/dtf/secret";
inline constexpr char kIndexEnv[] = "JOB_COMPLETION_INDEX";

struct RenderedObject {
  std::string file;  // "job.yaml"
  std::string kind;  // "Job"
  std::string name;
  std::string yaml;
};

}  // namespace dtf::launch::k8s
