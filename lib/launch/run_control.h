// Acting on a recorded run from another process: reconciling its records
// with the processes that are really there, and stopping it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {

// Whether the process that reaps the run's tasks (the foreground launcher
// or the detached supervisor) is still there.
bool SupervisorRunning(const RunRecord& record);
// Whether any task of the run still has a live process.
bool AnyTaskAlive(const RunView& run);

// When the run's supervisor is gone (killed, or the machine's processes
// otherwise lost), nobody will write what became of the tasks: this writes
// exit.json ("lost", or "stopped" after `dtf stop`) for each task whose
// processes are gone without one, and the run's final state to tasks.json
// once every task is accounted for. A no-op while the supervisor runs.
// `*run` is updated to match.
Status ReconcileRun(RunView* run);

struct StopReport {
  // Tasks that had live processes when the stop began.
  std::vector<std::string> signalled;
  // Those still there after `grace` and killed with SIGKILL.
  std::vector<std::string> killed;
  // Tasks recorded with a pid but no start time (start_ticks 0): they
  // cannot be told from another process that has the pid now, so nothing
  // was signalled for them.
  std::vector<std::string> unverifiable;
};

// Stops every task of the run in `run_dir` by the process groups recorded
// in tasks.json (never by name; a recycled pid is left alone): SIGTERM,
// then SIGKILL for groups still there after `grace`. A task recorded
// without a start time is left alone and listed in `unverifiable`. Marks the
// run stopped (stop.json) first, so its supervisor reports "stopped" rather
// than a failure, waits for the supervisor to record the exits, and reconciles.
// Idempotent: a run with nothing left running reports nothing signalled.
StatusOr<StopReport> StopRun(const std::string& run_dir,
                             std::chrono::milliseconds grace);

}  // namespace dtf::launch
