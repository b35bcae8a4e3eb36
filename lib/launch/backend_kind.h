// Which backend carries out a run: the profile's `backend` key, as the
// plan, plan.json and the dry run name it; and what the launch core may
// know of a backend without naming it (BackendTraits). Together with
// lib/launch/backends.cc, the one place outside a backend's folder that
// tells the backends apart.
#pragma once

#include <optional>
#include <string_view>

namespace dtf::launch {

enum class BackendKind {
  kLocal,       // every task a process on this machine
  kSsh,         // tasks on hosts reached over SSH
  kSlurm,       // tasks in a Slurm allocation (sbatch/srun)
  kKubernetes,  // pods of a Job or TFJob rendered as manifests (kubectl)
};

// A profile's backend when it names none.
inline constexpr BackendKind kDefaultBackend = BackendKind::kLocal;

// Every backend, in the order the profile's `backend` key lists them.
inline constexpr BackendKind kAllBackends[] = {
    BackendKind::kLocal, BackendKind::kSsh, BackendKind::kSlurm,
    BackendKind::kKubernetes};

// What the shared launch code (planning, records, status, logs, stop) may
// know of where a backend's tasks run, without asking for it by name.
struct BackendTraits {
  // The tasks are processes of this machine, known by the process groups
  // tasks.json records.
  bool local_processes = false;
  // The tasks run on hosts the launcher reaches over SSH and ships the
  // runtime and the job to; their files are on those hosts.
  bool ships_to_hosts = false;
  // A batch system places the tasks; their files are on storage the
  // launcher shares with them, and their hosts and ports are known once
  // they are ready.
  bool shared_storage = false;
  // A run is handed to the backend's own engine, which starts, restarts
  // and stops the tasks: there is no plan of processes, and dtf status,
  // logs and stop ask that engine (HandOffRun, QueryHandedOffRun).
  bool hands_off = false;
};

constexpr BackendTraits TraitsOf(BackendKind kind) {
  BackendTraits traits;
  switch (kind) {
    case BackendKind::kLocal:
      traits.local_processes = true;
      break;
    case BackendKind::kSsh:
      traits.ships_to_hosts = true;
      break;
    case BackendKind::kSlurm:
      traits.shared_storage = true;
      break;
    case BackendKind::kKubernetes:
      traits.hands_off = true;
      break;
  }
  return traits;
}

// "local", "ssh", "slurm", "kubernetes".
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
