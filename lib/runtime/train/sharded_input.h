// A worker's training input as input shards (docs/launch.md, *Elastic
// workers*): its own shard, and the shards of workers taken for dead that
// the chief handed on to it, read a batch of each in turn.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/input_position.h"

namespace dtf::runtime {

class ShardedInput {
 public:
  // A pipeline over input shard `shard` from `start`.
  using Open = std::function<StatusOr<std::unique_ptr<InputPipeline>>(
      int shard, const InputPosition& start)>;
  // The shards this worker reads now, as the chief last said. May block
  // until the chief is first heard.
  using Assigned = std::function<AssignedShards()>;
  // Tells the chief this worker stopped reading a shard it no longer
  // lists, at the position after the last batch read of it.
  using Released = std::function<void(int shard, const InputPosition& at)>;
  // Whether the task is being stopped: a release is waited for no more.
  using Stopping = std::function<bool()>;

  // `own` reads shard `own_shard`. Without `open` or `assigned` it is the
  // one input. `released` and `stopping` may be empty.
  ShardedInput(InputPipeline& own, int own_shard, Open open, Assigned assigned,
               Released released = nullptr, Stopping stopping = nullptr);
  ~ShardedInput();

  // The next batch of the shards this worker reads, taking each in turn;
  // false once every one has ended. `*shard` is -1 for a batch of the
  // worker's own shard, else the shard's number; `*position` is that
  // shard's position after the batch. A shard the chief no longer lists
  // (handed on to another worker while this one was taken for dead) is
  // read no more (and said so: `released`); one it lists anew is opened at
  // its start, as is one it lists under another grant (handed on and back
  // since the last look); one read to its end here is not read again. With no
  // shard left while a shard is being released to it, it waits for that one,
  // unless the task is being stopped (`stopping`).
  StatusOr<bool> Next(Batch* batch, int* shard, InputPosition* position);

  // Whether the chief lists a shard that is neither read here nor read to
  // its end under the grant listed: Next would read on. Not while a Next
  // is under way.
  bool HasNew();

  // Shards read to their end, and shards taken over.
  int ended() const { return int(ended_.size()); }
  int taken() const { return taken_count_; }

 private:
  struct Source {
    int shard = 0;
    uint64_t grant = 0;  // the chief's (InputShard::grant); 0 for its own
    InputPipeline* pipeline = nullptr;
    std::unique_ptr<InputPipeline> owned;  // null for the worker's own
  };
  Status Follow(const std::vector<InputShard>& assigned);

  const int own_shard_;
  const Open open_;
  const Assigned assigned_;
  const Released released_;
  const Stopping stopping_;
  std::vector<Source> sources_;
  // Shards read to their end here, with their end, and whether a release
  // of it was answered (the chief may ask for one it does not know ended).
  struct Ended {
    int shard = 0;
    uint64_t grant = 0;
    InputPosition end;
    bool released = false;
  };
  // Whether shard a.shard is read here, or was read to its end, under
  // a.grant.
  bool Reads(const InputShard& a) const;
  std::vector<Ended> ended_;
  size_t turn_ = 0;
  int taken_count_ = 0;
};

}  // namespace dtf::runtime
