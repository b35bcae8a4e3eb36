// Runs a backend hands to an engine of its own (PlanHooks::HandsOff:
// Kubernetes, whose Job controller starts, restarts and stops the pods).
// There is no plan of processes and no supervisor: dtf launch hands the run
// over and returns, and dtf status, logs and stop ask the engine about it
// by what the run directory records. HandOffRun and QueryHandedOffRun pick
// the backend (lib/launch/backends.cc); each such backend implements them
// in its own folder (lib/launch/k8s/k8s_run.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/plan.h"

namespace dtf::launch {

struct HandOffOptions {
  // Print what would be handed over (the backend's own form: manifests),
  // hand nothing over.
  bool dry_run = false;
  // Not "": write what would be handed over into this directory, hand
  // nothing over.
  std::string render_dir;
  // The launcher's warnings and notes (for this terminal's stderr).
  std::function<void(std::string_view)> on_warning;
  std::function<void(std::string_view)> on_info;
};

// What dtf status, logs and stop ask of a handed-off run's engine.
enum class EngineQuery { kStatus, kLogs, kLogsFollow, kStop };

// Hands the run of `request` to its backend's engine (or, by `how`, prints
// or writes what would be handed over). Returns the text for stdout: the
// dry run's documents, the directory written, or the new run's id and a
// newline. Unimplemented for a backend that does not hand runs off.
StatusOr<std::string> HandOffRun(const PlanRequest& request,
                                 const HandOffOptions& how);

// For a run directory a backend's engine was handed (it holds that
// backend's record): runs `what` against the engine, its output going to
// this process's stdout and stderr; an error when the engine's command
// failed. nullopt for a run directory no engine was handed.
std::optional<Status> QueryHandedOffRun(const std::string& run_dir,
                                        EngineQuery what);

// dtf scale of a run directory a backend's engine was handed: the engine
// told to run `workers` workers (lib/launch/k8s/k8s_scale.h). Returns the
// text for stdout, or why not; nullopt for a run directory no engine was
// handed.
std::optional<StatusOr<std::string>> ScaleHandedOffRun(
    const std::string& run_dir, int workers);

// Whether a backend's engine was handed the run of `run_dir` (it holds
// that backend's record).
bool IsHandedOffRun(const std::string& run_dir);

// dtf launch --resume of a run directory a backend's engine was handed:
// the engine is handed the run again, under its id, from what the
// directory recorded (lib/launch/k8s/k8s_resume.h). Returns the text for
// stdout, or the error that keeps the run from being resumed; nullopt for
// a run directory no engine was handed.
std::optional<StatusOr<std::string>> ResumeHandedOffRun(
    const std::string& run_dir, const HandOffOptions& how);

}  // namespace dtf::launch
