#include "lib/runtime/serve/serve_worker.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/cluster/task_state.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/train/allreduce_layout.h"
#include "lib/runtime/train/allreduce_worker.h"
#include "lib/runtime/train/worker.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The worker's options: its place in the cluster, and callbacks that carry
// its progress to the heartbeats and the caller.
WorkerOptions WorkerOptionsOf(ServeTask* t) {
  const ServeOptions& options = t->options;
  WorkerOptions wo;
  wo.index = options.index;
  wo.ps = options.ps;
  wo.workers = options.workers;
  wo.members =
      options.members.empty()
          ? StartedMembers(int(options.workers.size()), options.started_workers)
          : options.members;
  wo.credentials = t->creds;
  wo.threads = options.threads;
  wo.resume = options.restore;
  wo.coordinator = t->coordinator.get();
  wo.on_eval = options.on_eval;
  wo.on_note = options.on_note;
  wo.on_step = [t](int64_t steps_done, int64_t global_step,
                   const InputPosition& position) {
    if (t->heartbeat) t->heartbeat->Steps(steps_done, global_step, position);
    if (steps_done > 0 && !t->first_step_noted.exchange(true)) {
      t->Note(fmt::format(
          "{}: first step {:.2f} s after start", t->task,
          std::chrono::duration<double>(Clock::now() - t->started).count()));
    }
  };
  wo.on_progress = [t](const TrainProgress& p) {
    if (t->heartbeat)
      t->heartbeat->Set(TaskState::kRunning, p.step, p.loss,
                        p.examples_per_sec);
    if (t->options.on_progress) t->options.on_progress(p);
  };
  wo.cancel = &t->stop;
  if (t->heartbeat) {
    wo.end_training = &t->heartbeat->stop_training;
    wo.incarnation = t->heartbeat->incarnation();
    wo.input_shards = [t] { return t->heartbeat->InputShards(); };
    wo.input_released = [t](int shard, const InputPosition& at) {
      t->heartbeat->Released(shard, at);
    };
  } else if (t->coordinator) {
    wo.input_shards = [t] {
      return AssignedShards{t->coordinator->InputShardsOf(t->task), false};
    };
    wo.input_released = [t](int shard, const InputPosition& at) {
      t->coordinator->Released(t->task, shard, at);
    };
  }
  return wo;
}

// After training: the chief hears this worker's final state; the workers
// the chief's watchdog took for dead hear it; a failed chief ends the run.
void EndWorker(ServeTask* t, const StatusOr<TrainResult>& result) {
  // What the heartbeats cost, on each side (bench/scale reads these).
  if (t->heartbeat) {
    t->Note(fmt::format("{}: heartbeats: {} sent, {:.1f} ms CPU", t->task,
                        t->heartbeat->sent(),
                        t->heartbeat->CpuSeconds() * 1e3));
  }
  if (t->coordinator) {
    t->Note(fmt::format("{}: coordinator: {} heartbeats, {:.1f} ms CPU",
                        t->task, t->coordinator->heartbeats(),
                        t->coordinator->heartbeat_cpu_seconds() * 1e3));
  }
  if (t->heartbeat) {
    t->heartbeat->Set(result.ok() ? TaskState::kDone : TaskState::kFailed,
                      result.ok() ? result->steps : 0,
                      result.ok() ? result->loss : 0, 0);
    // Let the chief hear the final state before this task goes: sent now,
    // and waited for until the chief answers or is found gone (a restart
    // of every task stops the chief too).
    t->heartbeat->Flush(std::chrono::milliseconds(1200));
  }
  // The workers the watchdog took for dead hear it with their next
  // heartbeat (once a second), before the chief and its Coordinator go.
  if (t->coordinator) {
    const auto until = Clock::now() + std::chrono::seconds(3);
    while (t->coordinator->UntoldStalled() > 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // A failed chief ends the run; in a PS run it also sends every PS home.
  if (t->chief && !result.ok()) {
    t->coordinator->EndRun();
    if (!t->allreduce) {
      PsClient ps(t->options.ps, t->creds, -1, std::chrono::seconds(10));
      Status st =
          ps.Shutdown(StrCat("the chief failed: ", Message(result.status())));
      if (!st.ok()) t->Note(StrCat("could not stop every PS: ", Message(st)));
    }
  }
}

}  // namespace

void AddCoordinator(ServeTask* t, grpc::ServerBuilder* builder) {
  const ServeOptions& options = t->options;
  std::vector<std::pair<std::string, std::string>> tasks;
  for (size_t i = 0; i < options.ps.size(); ++i) {
    tasks.emplace_back(TaskName{Role::kPs, static_cast<int>(i)}.ToString(),
                       options.ps[i]);
  }
  for (size_t i = 0; i < options.workers.size(); ++i) {
    tasks.emplace_back(TaskName{Role::kWorker, static_cast<int>(i)}.ToString(),
                       options.workers[i]);
  }
  t->coordinator = std::make_unique<CoordinatorService>(t->creds, tasks);
  if (options.started_workers > 0) {
    t->coordinator->ReserveWorkers(options.started_workers);
  }
  // An allreduce run at another size: the slots not taking part are not
  // waited for.
  for (int w = 1; w < int(options.workers.size()) && !options.members.empty();
       ++w) {
    if (!std::binary_search(options.members.begin(), options.members.end(),
                            w)) {
      t->coordinator->ReserveWorker(w);
    }
  }
  builder->RegisterService(t->coordinator.get());
}

StatusOr<TrainResult> ServeWorker(ServeTask* t) {
  const WorkerOptions wo = WorkerOptionsOf(t);
  StatusOr<TrainResult> result =
      t->allreduce ? RunAllreduceWorker(t->job, wo) : RunWorker(t->job, wo);
  t->returned = true;
  {
    std::lock_guard<std::mutex> lock(t->fatal_mu);
    if (!t->fatal.ok()) result = t->fatal;
  }
  if (t->heartbeat && t->heartbeat->lost) result = t->ChiefLost();
  EndWorker(t, result);
  return FinishTask(t, std::move(result));
}

}  // namespace dtf::runtime
