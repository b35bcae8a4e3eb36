// What a training loop reports as it trains: loss and throughput over the
// steps since the last report — to the caller (on_progress), the chief's
// Coordinator and TensorBoard when there are — and each evaluation's
// metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "lib/base/status.h"
#include "lib/runtime/checkpoint/event_writer.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/train_step.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

class CoordinatorService;

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // `coordinator`: the chief's Coordinator, or null; `self` names this task
  // to it. `events`: the chief's TensorBoard events, or null.
  Progress(const TrainHooks& hooks, CoordinatorService* coordinator,
           std::string self, EventWriter* events);

  // One training step of `rows` examples at mean loss `loss`.
  void AddStep(int64_t rows, float loss, Clock::duration time);
  // Reports the steps since the last report at global step `step` in
  // `epoch`; nothing when there were none.
  void Report(int64_t step, int64_t epoch);
  // Ends an epoch: loss() becomes the epoch's mean loss.
  void EndEpoch();
  // Hands an evaluation at `step` to the Coordinator, TensorBoard and
  // on_eval, and returns its report.
  StatusOr<EvalReport> Evaluated(EvalMetrics metrics, int64_t step,
                                 std::string split);

  // The loss last reported or of the last epoch ended, whichever is later.
  double loss() const { return loss_; }
  // The mean loss of the last epoch ended; without one, of the steps so
  // far in the epoch; without those, the loss last reported.
  double epoch_loss() const;
  int64_t examples() const { return examples_; }
  double train_seconds() const { return Seconds(in_steps_); }
  double examples_per_sec() const;

 private:
  const TrainHooks& hooks_;
  CoordinatorService* coordinator_;
  std::string self_;
  EventWriter* events_;
  const Clock::time_point start_ = Clock::now();
  double loss_ = 0;
  double reported_loss_ = 0;
  double last_epoch_loss_ = 0;
  int64_t examples_ = 0;
  Clock::duration in_steps_{};
  // Since the last report and since the epoch began.
  double window_loss_ = 0, epoch_loss_ = 0;
  int64_t window_rows_ = 0, epoch_rows_ = 0, window_steps_ = 0;
  Clock::duration window_time_{};
};

}  // namespace dtf::runtime
