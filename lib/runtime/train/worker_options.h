// What a distributed worker is given (worker.h's RunWorker,
// allreduce_worker.h's RunAllreduceWorker): its place in the run, its peers,
// and what it reports and how it stops. The update strategies (update.h)
// take it too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/data/input_pipeline.h"
#include "lib/runtime/ps/run_credentials.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

class CoordinatorService;

struct WorkerOptions {
  int index = 0;
  std::vector<std::string> ps;       // host:port of every PS
  std::vector<std::string> workers;  // host:port of every worker
  // Allreduce: the workers taking part (allreduce_layout.h), ascending;
  // empty: every one.
  std::vector<int> members;
  RunCredentials credentials;
  int threads = 0;
  // What tells this process of the task from its others (its heartbeats';
  // 0: not told), which the allreduce rendezvous carries too.
  uint64_t incarnation = 0;
  // Chief only: the service its server runs, which it updates.
  CoordinatorService* coordinator = nullptr;
  // Progress, eval and notes, as dtf train reports them.
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EvalReport&)> on_eval;
  std::function<void(std::string_view)> on_note;
  // TrainHooks::on_step: what the heartbeats carry to the chief (its
  // step-progress watchdog, and each worker's input position, which its
  // checkpoints record).
  std::function<void(int64_t steps_done, int64_t global_step,
                     const InputPosition& position)>
      on_step;
  // Parameter-server modes: the input shards the chief has this worker
  // read (TrainHooks::input_shards); empty: its own alone.
  std::function<AssignedShards()> input_shards;
  std::function<void(int shard, const InputPosition& at)> input_released;
  // Set when the run must stop (Ctrl-C, SIGTERM, or the chief lost): the
  // worker returns Cancelled, the chief after writing its checkpoint.
  const std::atomic<bool>* cancel = nullptr;
  // A resumed run (dtf launch --resume) or a restarted worker: the input
  // goes on from the position the run's last checkpoint recorded for this
  // worker (checkpoint_files.h; when it has none, from the start of the
  // chief's epoch); a checkpoint of another run is not used, a corrupt one
  // or one of another job fingerprint is an error.
  bool resume = false;
  // Other workers: set once the chief stopped training early (early
  // stopping); the worker then ends as when its data runs out. May be null.
  const std::atomic<bool>* end_training = nullptr;
};

}  // namespace dtf::runtime
