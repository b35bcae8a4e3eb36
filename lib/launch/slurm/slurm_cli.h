// Running Slurm's commands (sbatch, squeue, scontrol, sacct, scancel,
// sinfo) from the launcher: found in PATH, their output captured.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch::slurm {

struct CommandResult {
  int exit_code = -1;  // as a shell reports it (128 + a signal)
  std::string out;
  std::string err;

  bool ok() const { return exit_code == 0; }
  // "sbatch exited with status 1: <its stderr, trimmed>".
  std::string Describe(const std::string& program) const;
};

// Runs `argv` (argv[0] searched in PATH), stdin /dev/null, and waits up to
// `timeout` (then it is killed, exit_code 137). An error only when it
// cannot be started: NotFound "sbatch: not found in PATH (is Slurm
// installed on this machine?)".
// The absolute path of Slurm's command `name` ("srun") in PATH, for a
// process the launcher spawns and follows itself; NotFound as
// RunSlurmCommand's.
StatusOr<std::string> FindSlurmCommand(const std::string& name);

StatusOr<CommandResult> RunSlurmCommand(
    const std::vector<std::string>& argv,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace dtf::launch::slurm
