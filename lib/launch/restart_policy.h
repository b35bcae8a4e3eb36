// What a launcher does with a task that ended before the run did, the same
// on every backend: the chief's exit ends the run (it is never restarted);
// a task that exited 0 is left alone; in an allreduce run any other end of
// a worker ends the run (its peers would wait for it in their collectives
// for ever, and one rank cannot rejoin them alone); otherwise a parameter
// server or a worker other than the chief is started again, with the same
// command line and --restore (RestartArgv, plan.h: a parameter server
// restores the run's last checkpoint, a worker reads on from its recorded
// input position) and its output appended to its logs, up to
// the profile's max_restarts times; past that a worker is left out (the
// run goes on without it) and a parameter server ends the run.
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
  kFailAllreduce,  // an allreduce worker: the run ends (AllreduceWorkerLost)
  kFail,           // a parameter server out of restarts: the run ends
};

// `clean`: the task exited 0. `chief_exited`: the chief has exited before.
// `restarts`: the times the task was started again so far.
TaskEndAction OnTaskEnded(const Plan& plan, const TaskPlan& task, bool clean,
                          bool chief_exited, int restarts);

// "ps:1 killed by SIGKILL; starting it again (1 of 2 restarts)".
std::string RestartNote(const Plan& plan, const TaskPlan& task,
                        std::string_view how, int restarts);

}  // namespace dtf::launch
