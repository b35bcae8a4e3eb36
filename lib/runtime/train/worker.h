// A distributed worker: the trainer core of trainer.h with its variables on
// the parameter servers. Each step pulls the dense variables and only the
// embedding / wide-weight rows its batch touches, computes the gradients on
// a compact copy, and pushes them. Workers split the training shards
// (docs/input-pipeline.md: whole files each when there are at least as many
// files as workers, else records by index).
//
// Worker 0 is the chief: it also serves the Coordinator (heartbeats,
// status), evaluates, writes TensorBoard events, the checkpoints (the last
// and the best) and the exported model (the best), and ends the run: once
// every other worker finished (or went silent for train.heartbeat_timeout)
// it tells every PS to exit. When early stopping ends training the chief
// tells the other workers through its Coordinator (end_training) first.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"
#include "lib/runtime/ps/run_credentials.h"
#include "lib/runtime/train/trainer.h"

namespace dtf::runtime {

class CoordinatorService;

struct WorkerOptions {
  int index = 0;
  std::vector<std::string> ps;       // host:port of every PS
  std::vector<std::string> workers;  // host:port of every worker
  RunCredentials credentials;
  int threads = 0;
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

// Trains this worker's share. The chief's result holds the final evaluation
// and the paths it wrote; other workers' only their own figures.
StatusOr<TrainResult> RunWorker(const JobFile& job,
                                const WorkerOptions& options);

}  // namespace dtf::runtime
