// Where a task of a Slurm run's first job step was, kept so that the task
// can be started again in a job step of its own (srun --overlap, one task,
// on the same node) and take the same place: the first step's task id,
// task count, local id, nodes and tasks per node, as the SLURM_* variables
// ReadSlurmStep reads (slurm_env.h). Written by the task into
// <task dir>/slurm-step (kStepRecordFile) when it starts; read by its
// replacement (`dtf task slurm --replace K`).
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/slurm/slurm_env.h"

namespace dtf::launch::slurm {

inline constexpr char kStepRecordFile[] = "slurm-step";

// `step` as NAME=VALUE lines: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_STEP_NODELIST (the nodes, comma-separated) and
// SLURM_STEP_TASKS_PER_NODE (one count per node, comma-separated).
std::string StepRecordText(const SlurmStep& step);

// Sets the variables of a record (`text`, read from `file`) in `env`, over
// those of the replacement's own one-task step. InvalidArgument naming
// file:line for a line that is not NAME=VALUE, a name the record does not
// hold, or a record without all five.
Status ApplyStepRecord(std::string_view text, std::string_view file,
                       Environment* env);

}  // namespace dtf::launch::slurm
