// Which backend carries out a run: the profile's `backend` key, as the
// plan, plan.json and the dry run name it. lib/launch/backends.cc is the
// one place outside a backend's folder that tells the backends apart; the
// shared code asks a backend's hooks (lib/launch/plan_hooks.h: Plan::
// hooks(), PlanHooksOf).
#pragma once

#include <optional>
#include <string_view>

namespace dtf::launch {

enum class BackendKind {
  kLocal,       // every task a process on this machine
  kSsh,         // tasks on hosts reached over SSH
  kSlurm,       // tasks in a Slurm allocation (sbatch/srun)
  kKubernetes,  // pods of a Job or TFJob rendered as manifests (kubectl)
  kSpark,       // a barrier stage of a Spark application (spark-submit)
};

// A profile's backend when it names none.
inline constexpr BackendKind kDefaultBackend = BackendKind::kLocal;

// Every backend, in the order the profile's `backend` key lists them.
inline constexpr BackendKind kAllBackends[] = {
    BackendKind::kLocal, BackendKind::kSsh, BackendKind::kSlurm,
    BackendKind::kKubernetes, BackendKind::kSpark};

// "local", "ssh", "slurm", "kubernetes", "spark".
constexpr std::string_view BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kLocal:
      return "local";
    case BackendKind::kSsh:
      return "ssh";
    case BackendKind::kSlurm:
      return "slurm";
    case BackendKind::kKubernetes:
      return "kubernetes";
    case BackendKind::kSpark:
      return "spark";
  }
  return "local";
}

// The backend BackendName gives `name`; nullopt for any other text.
constexpr std::optional<BackendKind> ParseBackendName(std::string_view name) {
  for (BackendKind kind : kAllBackends) {
    if (BackendName(kind) == name) return kind;
  }
  return std::nullopt;
}

}  // namespace dtf::launch
