// What a launcher does with a task that ended before the run did, the same
// on every backend: the chief's exit ends the run (it is never restarted);
// a task that exited 0 is left alone; otherwise a parameter server or a
// worker other than the chief is started again, with the same command line
// and --restore (RestartArgv, plan.h: a parameter server restores the run's
// last checkpoint, a worker reads on from its recorded input position) and
// its output appended to its logs, up to the profile's max_restarts times;
// past that a worker is left out (the run goes on without it) and a
// parameter server ends the run. In an allreduce run one rank cannot rejoin
// its peers' collectives alone (they would wait for it for ever): a
// worker's failure stops every other worker (the chief writes its
// checkpoint as it stops) and starts them all again with --restore, every
// rank from that checkpoint, as long as the run has restarts left; past
// them it ends the run. In a batch plan (PlanRequest::batch_command) no
// task is special and none is restarted: one that exited 0 is done, any
// other ends the run. Elastic workers (the profile's min_workers): a
// failed worker other than the chief is left out while at least
// min_workers workers are left running (in an allreduce run every other
// worker starts again from the last checkpoint without it, at the new
// size, using no restart); below that it is restarted as max_restarts
// allows, and past them the run ends.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/launch/plan.h"

namespace dtf::launch {

enum class TaskEndAction {
  kNone,           // exited 0, or the chief has exited already
  kChiefExited,    // the chief: the run ends once the others follow
  kRestart,        // started again (RestartArgv)
  kGoOn,           // a worker other than the chief: the run goes on
  kRestartAll,     // an allreduce worker: every worker starts again
  kResizeAll,      // an allreduce worker above min_workers: every other
                   // worker starts again without it
  kFailAllreduce,  // an allreduce worker, no restarts left: the run ends
  kFail,           // a parameter server out of restarts: the run ends
  kFailBelowMin,   // a worker out of restarts below min_workers: it ends
};

// `clean`: the task exited 0. `chief_exited`: the chief has exited before.
// `restarts`: the times the task was started again so far.
// `live_workers`: the workers still running but this task (the chief
// among them); -1: not known (min_workers is then not applied).
TaskEndAction OnTaskEnded(const Plan& plan, const TaskPlan& task, bool clean,
                          bool chief_exited, int restarts,
                          int live_workers = -1);

// Why a run ends when its worker `task` ended `how` with `live_workers`
// left, below min_workers, and no restarts left (kFailBelowMin).
std::string BelowMinWorkers(const Plan& plan, const TaskPlan& task,
                            std::string_view how, int live_workers);

// "ps:1 killed by SIGKILL; starting it again (1 of 2 restarts)".
std::string RestartNote(const Plan& plan, const TaskPlan& task,
                        std::string_view how, int restarts);

// "task worker:2 killed by SIGKILL; an allreduce run restarts every worker
// from the last checkpoint (1 of 2 restarts)".
std::string RestartAllNote(const Plan& plan, const TaskPlan& task,
                           std::string_view how, int restarts);

// "task worker:2 killed by SIGKILL; 2 of 3 workers are left (min_workers =
// 2): every worker starts again without it from the last checkpoint, at
// 2 ranks (workers 0,1)".
std::string ResizeNote(const Plan& plan, const TaskPlan& task,
                       std::string_view how, const std::vector<int>& members);

// Why an allreduce run ends when its worker `task` ended `how` ("exited
// with status 1") before the run did (kFailAllreduce): both backends say it
// alike.
std::string AllreduceWorkerLost(const Plan& plan, const TaskPlan& task,
                                std::string_view how);

}  // namespace dtf::launch
