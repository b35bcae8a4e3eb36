#include "lib/launch/local/local_batch.h"

#include <memory>
#include <utility>

#include "lib/launch/batch/supervised_batch.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> NewLocalBatchRunner(Profile profile,
                                                 RunStarter start) {
  // The placement's defaults: files where they are, shards beside the
  // output.
  return NewSupervisedBatchRunner(
      std::move(profile), std::make_unique<ShardPlacement>(), std::move(start));
}

}  // namespace dtf::launch
