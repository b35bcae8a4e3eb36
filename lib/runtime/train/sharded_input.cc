#include "lib/runtime/train/sharded_input.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace dtf::runtime {

ShardedInput::ShardedInput(InputPipeline& own, int own_shard, Open open,
                           Assigned assigned, Released released)
    : own_shard_(own_shard),
      open_(std::move(open)),
      assigned_(std::move(assigned)),
      released_(std::move(released)) {
  sources_.push_back({own_shard, &own, nullptr});
}

ShardedInput::~ShardedInput() = default;

Status ShardedInput::Follow(const std::vector<InputShard>& assigned) {
  // Shards no longer listed: given up (opened again at the start the
  // chief gives should it list one anew).
  for (auto it = sources_.begin(); it != sources_.end();) {
    const bool listed =
        std::any_of(assigned.begin(), assigned.end(),
                    [&](const InputShard& a) { return a.shard == it->shard; });
    if (listed) {
      ++it;
      continue;
    }
    if (released_) released_(it->shard, it->pipeline->position());
    const size_t at = size_t(it - sources_.begin());
    it = sources_.erase(it);
    if (turn_ > at) --turn_;
  }
  // A shard read to its end that the chief asks back: released at its
  // end (the worker it goes to reads nothing of it).
  for (Ended& e : ended_) {
    const bool listed =
        std::any_of(assigned.begin(), assigned.end(),
                    [&](const InputShard& a) { return a.shard == e.shard; });
    if (listed || e.released) continue;
    if (released_) released_(e.shard, e.end);
    e.released = true;
  }
  for (const InputShard& a : assigned) {
    const bool known =
        std::any_of(sources_.begin(), sources_.end(),
                    [&](const Source& s) { return s.shard == a.shard; }) ||
        HasEnded(a.shard);
    if (known) continue;
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline,
                         open_(a.shard, a.start));
    InputPipeline* raw = pipeline.get();
    sources_.push_back({a.shard, raw, std::move(pipeline)});
    ++taken_count_;
  }
  if (turn_ >= sources_.size()) turn_ = 0;
  return OkStatus();
}

bool ShardedInput::HasEnded(int shard) const {
  return std::any_of(ended_.begin(), ended_.end(),
                     [&](const Ended& e) { return e.shard == shard; });
}

bool ShardedInput::HasNew() {
  if (!open_ || !assigned_) return false;
  const std::optional<std::vector<InputShard>> now = assigned_().shards;
  if (!now) return false;
  return std::any_of(now->begin(), now->end(), [&](const InputShard& a) {
    return std::none_of(sources_.begin(), sources_.end(),
                        [&](const Source& s) { return s.shard == a.shard; }) &&
           !HasEnded(a.shard);
  });
}

StatusOr<bool> ShardedInput::Next(Batch* batch, int* shard,
                                  InputPosition* position) {
  while (true) {
    bool pending = false;
    if (open_ && assigned_) {
      AssignedShards now = assigned_();
      if (now.shards) DTF_RETURN_IF_ERROR(Follow(*now.shards));
      pending = now.pending;
    }
    if (!sources_.empty() || !pending) break;
    // A shard is being released to this worker: it comes within a
    // heartbeat or two of its holder's.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  while (!sources_.empty()) {
    Source& s = sources_[turn_];
    DTF_ASSIGN_OR_RETURN(const bool more, s.pipeline->Next(batch));
    if (more) {
      *shard = s.shard == own_shard_ ? -1 : s.shard;
      *position = s.pipeline->position();
      turn_ = (turn_ + 1) % sources_.size();
      return true;
    }
    // This shard has ended; the others go on.
    *position = s.pipeline->position();
    ended_.push_back({s.shard, s.pipeline->position(), false});
    sources_.erase(sources_.begin() + std::ptrdiff_t(turn_));
    if (turn_ >= sources_.size()) turn_ = 0;
  }
  *shard = -1;
  return false;
}

}  // namespace dtf::runtime
