// What an srun task learns from Slurm's environment (SLURM_PROCID,
// SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE, ...), and where every task
// of a dtf run under Slurm is: tasks in plan order (parameter servers, then
// workers) are Slurm's task ids, laid out over the step's nodes as the block
// distribution does.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"

namespace dtf::launch::slurm {

// A process environment, by name; cmd/ fills it from environ.
using Environment = std::map<std::string, std::string, std::less<>>;

// One srun task's view of its job step.
struct SlurmStep {
  int procid = 0;   // SLURM_PROCID: this task, 0..ntasks-1
  int ntasks = 0;   // SLURM_NTASKS (SLURM_NPROCS on old Slurm)
  int localid = 0;  // SLURM_LOCALID: this task among its node's
  // SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), expanded.
  std::vector<std::string> nodes;
  // SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE), one count per
  // node: "2(x2),1" is {2, 2, 1}.
  std::vector<int> tasks_per_node;
  std::string node_name;  // SLURMD_NODENAME; "" when unset
  std::string job_id;     // SLURM_JOB_ID; "" when unset
  std::string step_id;    // SLURM_STEP_ID; "" when unset
};

// The step of `env`. InvalidArgument naming the variable and its value for
// a missing or malformed one, or for counts that disagree (tasks per node
// not summing to SLURM_NTASKS, SLURM_PROCID out of range, this task not on
// SLURMD_NODENAME or not at SLURM_LOCALID as the block distribution places
// it).
StatusOr<SlurmStep> ReadSlurmStep(const Environment& env);

// "2(x2),1" -> {2, 2, 1}. `variable` names the text in errors.
StatusOr<std::vector<int>> ExpandTasksPerNode(std::string_view text,
                                              std::string_view variable);

struct SlurmLayoutOptions {
  int ps = 0;       // parameter servers, the first task ids
  int workers = 0;  // workers, the task ids after them
  // Task k listens on base_port + (its local id on its node). Required,
  // 1..65535.
  int base_port = 0;
  // GPUs each node has for the run's workers; 0 (the default): none.
  int gpus_per_node = 0;
};

// One task of the run, as every task computes it alike.
struct SlurmTaskSlot {
  Role role = Role::kWorker;
  int index = 0;     // within its role
  std::string host;  // the node it runs on
  int port = 0;
  int node = 0;        // index into SlurmStep::nodes
  int local_rank = 0;  // among its node's tasks
  // A worker's GPU among its node's gpus_per_node: the workers of a node
  // take them in turn (local worker rank modulo gpus_per_node); unset for
  // parameter servers and without GPUs.
  std::optional<int> gpu;

  std::string name() const { return TaskName{role, index}.ToString(); }
  std::string address() const { return host + ":" + std::to_string(port); }
};

struct SlurmLayout {
  std::vector<SlurmTaskSlot> tasks;  // by task id (SLURM_PROCID)
  int self = 0;                      // this task's id

  const SlurmTaskSlot& me() const { return tasks[static_cast<size_t>(self)]; }
  // "host:port,host:port" of the tasks with `role`, in index order.
  std::string Addresses(Role role) const;
};

// Every task's place. InvalidArgument when SLURM_NTASKS is not ps + workers
// (naming both), or when a port runs past 65535.
StatusOr<SlurmLayout> LayoutSlurmTasks(const SlurmStep& step,
                                       const SlurmLayoutOptions& options);

}  // namespace dtf::launch::slurm
