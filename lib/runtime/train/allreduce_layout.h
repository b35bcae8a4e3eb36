// The ranks of an allreduce run and the input shards each reads (docs/
// launch.md, *Elastic workers*). The run's training input is split into
// one shard per worker slot of its plan (the workers it was launched with
// and the slots max_workers reserves), however many workers take part: a
// run restarted at another size (a worker lost while min_workers allows
// it, or `dtf scale`) keeps its shards, and the checkpoint keeps each
// shard's position. The workers taking part (`members`: worker indexes,
// ascending, the chief's 0 first) are the collective's ranks in that
// order; each reads its own slot's shard, and the shards of the slots not
// taking part are dealt out among them one at a time, from the last rank
// towards the chief (which also evaluates and writes the checkpoints).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::runtime {

struct AllreduceLayout {
  int rank = 0;  // this worker's place in the collective
  int size = 1;  // the ranks
  // The input shards this worker reads: its own first, then the others
  // dealt to it, ascending.
  std::vector<int> shards;
};

// The layout for worker `index` of a run of `slots` worker slots with
// `members` taking part (empty: every slot). InvalidArgument naming
// --members when they are not ascending indexes below `slots` starting at
// 0, or do not hold `index`.
StatusOr<AllreduceLayout> LayoutAllreduce(int index, int slots,
                                          const std::vector<int>& members);

// The workers taking part when a run of `slots` slots starts `started` of
// them (0: every one): 0 .. started - 1.
std::vector<int> StartedMembers(int slots, int started);

// "0,2,3".
std::string MembersText(const std::vector<int>& members);

}  // namespace dtf::runtime
