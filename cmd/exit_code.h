// dtf's exit codes, documented in dtf(1), and the mapping from a Status.
#pragma once

#include "lib/base/status.h"

namespace dtf::cli {

enum ExitCode : int {
  kExitOk = 0,
  // The job ran and failed (a task failed, a run did not finish).
  kExitJobFailed = 1,
  // Usage or bad input: flags, job file, profile, CSV, corrupt records.
  kExitBadInput = 2,
  // The environment refused: permissions, disk full, out of memory, no GPU
  // (or driver, or CUDA library) where one is asked for, stdout unwritable.
  kExitEnvironment = 3,
  // A host or task could not be reached in time.
  kExitUnreachable = 4,
  // Interrupted (SIGINT/SIGTERM): 128 + SIGINT, as shells report it.
  kExitInterrupted = 130,
};

ExitCode ExitCodeFor(const Status& status);

}  // namespace dtf::cli
