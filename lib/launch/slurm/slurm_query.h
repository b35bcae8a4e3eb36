// What the launcher reads from Slurm's commands about a run's job: sbatch
// --parsable's job id, the job's state from squeue, scontrol or sacct, and
// a job step's id from squeue --steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch::slurm {

// `sbatch --parsable` prints "ID" or "ID;cluster": the ID. InvalidArgument
// quoting the output when it is not a job id.
StatusOr<std::string> ParseSbatchJobId(std::string_view output);

// `squeue -h -j ID -o %T`: the job's state ("PENDING", "RUNNING",
// "COMPLETING", ...), or nullopt when the output is empty (the job left
// the queue). InvalidArgument for a line that is not a state.
StatusOr<std::optional<std::string>> ParseSqueueState(std::string_view output);

// `scontrol show job ID` (or -o): the value of JobState=, nullopt when
// there is none.
std::optional<std::string> ParseScontrolJobState(std::string_view output);

// `sacct -n -P -j ID -o JobID,State`: the state of the job itself (the
// line whose JobID is `job_id`, "CANCELLED by 0" read as "CANCELLED"),
// nullopt when it has no such line.
std::optional<std::string> ParseSacctJobState(std::string_view output,
                                              std::string_view job_id);

// `squeue -h -s -j ID -o "%i %j"`: the id ("ID.STEP") of the step named
// `name`, nullopt when there is none.
std::optional<std::string> ParseStepId(std::string_view output,
                                       std::string_view name);

// A time in Slurm's formats ("MM", "MM:SS", "HH:MM:SS", "D-HH",
// "D-HH:MM", "D-HH:MM:SS") in seconds; nullopt for "UNLIMITED" or
// "infinite"; InvalidArgument for anything else.
StatusOr<std::optional<int64_t>> SlurmTimeSeconds(std::string_view text);

// One line of `sinfo -h -o "%P|%l|%D|%a"`.
struct SinfoPartition {
  std::string name;
  bool is_default = false;             // sinfo marks it with '*'
  std::optional<int64_t> max_seconds;  // nullopt: no limit
  int nodes = 0;
  bool up = false;
};
// The partitions, once each (sinfo prints a partition once per node
// state: their nodes are added up). InvalidArgument quoting a line that
// does not parse.
StatusOr<std::vector<SinfoPartition>> ParseSinfoPartitions(
    std::string_view output);

// Whether a job in `state` is over (COMPLETED, FAILED, CANCELLED, TIMEOUT,
// NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE) rather than
// pending or running.
bool SlurmStateFinal(std::string_view state);

}  // namespace dtf::launch::slurm
