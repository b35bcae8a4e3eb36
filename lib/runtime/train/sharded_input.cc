#include "lib/runtime/train/sharded_input.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace dtf::runtime {

ShardedInput::ShardedInput(InputPipeline& own, int own_shard, Open open,
                           Assigned assigned, Released released,
                           Stopping stopping)
    : own_shard_(own_shard),
      open_(std::move(open)),
      assigned_(std::move(assigned)),
      released_(std::move(released)),
      stopping_(std::move(stopping)) {
  sources_.push_back({own_shard, 0, &own, nullptr});
}

ShardedInput::~ShardedInput() = default;

namespace {

// Shard `shard` as `assigned` lists it; null when it does not.
const InputShard* Listed(const std::vector<InputShard>& assigned, int shard) {
  const auto it =
      std::find_if(assigned.begin(), assigned.end(),
                   [&](const InputShard& a) { return a.shard == shard; });
  return it == assigned.end() ? nullptr : &*it;
}

}  // namespace

Status ShardedInput::Follow(const std::vector<InputShard>& assigned) {
  // Shards no longer listed: given up (opened again at the start the
  // chief gives should it list one anew). A shard listed under another
  // grant was handed on and back since this worker last looked: what it
  // read of it meanwhile another worker read too, so it reads on from the
  // listed start (below), not from where it was.
  for (auto it = sources_.begin(); it != sources_.end();) {
    const InputShard* listed = Listed(assigned, it->shard);
    if (listed != nullptr && listed->grant == it->grant) {
      ++it;
      continue;
    }
    if (listed == nullptr && released_) {
      released_(it->shard, it->pipeline->position());
    }
    const size_t at = size_t(it - sources_.begin());
    it = sources_.erase(it);
    if (turn_ > at) --turn_;
  }
  // A shard read to its end that the chief asks back: released at its
  // end (the worker it goes to reads nothing of it). One listed anew
  // under another grant is read again from its listed start.
  for (auto e = ended_.begin(); e != ended_.end();) {
    const InputShard* listed = Listed(assigned, e->shard);
    if (listed != nullptr && listed->grant != e->grant) {
      e = ended_.erase(e);
      continue;
    }
    if (listed == nullptr && !e->released) {
      if (released_) released_(e->shard, e->end);
      e->released = true;
    }
    ++e;
  }
  for (const InputShard& a : assigned) {
    if (Reads(a)) continue;
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline,
                         open_(a.shard, a.start));
    InputPipeline* raw = pipeline.get();
    sources_.push_back({a.shard, a.grant, raw, std::move(pipeline)});
    ++taken_count_;
  }
  if (turn_ >= sources_.size()) turn_ = 0;
  return OkStatus();
}

bool ShardedInput::Reads(const InputShard& a) const {
  return std::any_of(sources_.begin(), sources_.end(),
                     [&](const Source& s) {
                       return s.shard == a.shard && s.grant == a.grant;
                     }) ||
         std::any_of(ended_.begin(), ended_.end(), [&](const Ended& e) {
           return e.shard == a.shard && e.grant == a.grant;
         });
}

bool ShardedInput::HasNew() {
  if (!open_ || !assigned_) return false;
  const std::optional<std::vector<InputShard>> now = assigned_().shards;
  if (!now) return false;
  return std::any_of(now->begin(), now->end(),
                     [&](const InputShard& a) { return !Reads(a); });
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
    // Stopped meanwhile: the release may never come (its holder stopped
    // too, or waits on this worker's steps).
    if (stopping_ && stopping_()) break;
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
    ended_.push_back({s.shard, s.grant, s.pipeline->position(), false});
    sources_.erase(sources_.begin() + std::ptrdiff_t(turn_));
    if (turn_ >= sources_.size()) turn_ = 0;
  }
  *shard = -1;
  return false;
}

}  // namespace dtf::runtime
