// What a backend's launcher keeps of tasks that report through files in a
// run directory it shares with them (the Slurm and Spark backends): each
// task writes its ready file ("host:port"), its stdout and stderr, its node
// (kNodeFile) and, once it has exited, its exit.json into
// <run dir>/<role>-<index>/ (run_layout.h). DirTasks reads them there:
// which tasks are ready, which have ended and how, where they ran. The
// task's side is dir_task_command.h. Not thread-safe; every method but the
// constructor after Attach.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/plan_hooks.h"

namespace dtf::launch {

// Backend::Place for the backends whose engine places the tasks (each
// picks its own port): plans `request` with `hooks` without ports or a run
// id, lets `before_claim` (may be empty) check what can be checked and
// amend the request (archives to ship), claims the run directory (a new
// run id, or request.run_id's again for a resume) and plans again in it.
StatusOr<Plan> PlanInClaimedRunDir(
    PlanRequest request, const PlanHooks& hooks,
    const std::function<Status(PlanRequest*)>& before_claim);

// "; the last lines of <file>:\n  <line>..." for the last `n` lines of
// `file`; "" when it has none.
std::string QuoteLastLines(const std::string& file, size_t n);

class DirTasks {
 public:
  // `plan` outlives this; events go to `events`.
  void Attach(const Plan* plan, BackendEvents* events);

  // Removes every task's ready and exit files: a resumed run's earlier
  // ends are not this attempt's.
  void ClearEarlierEnds() const;

  // Hands the tasks' new output lines to the events (when wanted); with
  // `flush`, also a last line without its '\n'.
  void PumpOutput(bool flush);

  // Tells the events of every task that has written its ready file since
  // the last look (a batch task's ready file says which shard it is, not
  // where it runs: its host is then left to its node file).
  void CheckReady();

  // Reads the exit records that have appeared. Each task found is marked
  // ended (its host read from its node file when its ready file gave
  // none); a failure is recorded as stopped instead when the events say
  // ends are stops; it is noted ("<task> <how>"), handed to `before_end`
  // (may be empty) and told to the events. With `failures_first`, the
  // failures among those found are told first (the task that failed, not
  // one stopped for it, is what ends a gang).
  void CheckExits(
      bool failures_first,
      const std::function<void(size_t i, const TaskEnd& end)>& before_end);

  // Whether task `i`, ending as `end` says, is a worker other than the
  // chief that failed while the chief still runs, in a run that is not a
  // batch one: where the tasks run as one gang (a Spark barrier stage, a
  // Slurm step under --kill-on-bad-exit), that ends the run.
  bool FailsGang(size_t i, const TaskEnd& end) const;

  // Marks every task not ended yet ended and writes its exit.json
  // (stopped when the events say ends are stops, else lost; a failure to
  // write is noted as a warning). Returns those tasks, in plan order, with
  // the state recorded; the caller words their ends and tells the events.
  struct Missing {
    size_t i = 0;
    TaskState state = TaskState::kLost;
  };
  std::vector<Missing> EndMissing();

  // Calls `check` every 100 ms until every task has ended or `lag` has
  // passed (exit records on shared storage may show up a moment late).
  void AwaitEnds(std::chrono::milliseconds lag,
                 const std::function<void()>& check) const;

  // Task `i` was started again: neither ready nor ended until its new
  // files say so (its host stays).
  void StartedAgain(size_t i) {
    tasks_[i].ready = false;
    tasks_[i].ended = false;
  }

  bool AllEnded() const;
  size_t size() const { return tasks_.size(); }
  bool ready(size_t i) const { return tasks_[i].ready; }
  bool ended(size_t i) const { return tasks_[i].ended; }
  // Where task `i` runs ("" while unknown): from its ready file, else its
  // node file.
  const std::string& host(size_t i) const { return tasks_[i].host; }

  // The last `lines` lines of task `i`'s stderr, quoted
  // (QuoteLastLines), or " (its stderr, <file>, is empty)" followed by
  // `when_empty`.
  std::string StderrTail(size_t i, size_t lines,
                         std::string_view when_empty) const;

 private:
  struct Task {
    bool ready = false;
    bool ended = false;
    std::string host;
  };

  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  std::vector<Task> tasks_;
  std::vector<std::unique_ptr<LineTail>> tails_;  // 2 per task
};

}  // namespace dtf::launch
