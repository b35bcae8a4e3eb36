// What a caller of a training loop hears and how it stops one: the
// callbacks of TrainOptions and WorkerOptions in one place.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "lib/data/input_pipeline.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

struct TrainHooks {
  // Called from the training thread. Any may be empty.
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EvalReport&)> on_eval;
  std::function<void(std::string_view)> on_note;
  // When the loop starts stepping (steps_done 0) and after each step, with
  // the steps this loop has finished, the global step, and the input's
  // position after the last step whose update is known to be in the
  // variables (Update::AppliedOnReturn; the start position before the
  // first step).
  std::function<void(int64_t steps_done, int64_t global_step,
                     const InputPosition& position)>
      on_step;
  // Parameter-server workers: the input shards the chief has this worker
  // read (ShardedInput::Assigned); empty: its own alone.
  std::function<AssignedShards()> input_shards;
  std::function<void(int shard, const InputPosition& at)> input_released;
  // Training stops with Cancelled once this becomes true. May be null.
  const std::atomic<bool>* cancel = nullptr;

  void Note(std::string_view text) const {
    if (on_note) on_note(text);
  }
  bool cancelled() const { return cancel != nullptr && cancel->load(); }
};

}  // namespace dtf::runtime
