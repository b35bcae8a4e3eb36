// Chief::WriteShardedCheckpoint (chief.h): a generation of a run whose
// variables live on parameter servers, written without gathering them.
#include <utility>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/train/chief.h"

namespace dtf::runtime {

Status Chief::WriteShardedCheckpoint(Update& update, TrainState cut) {
  const std::string prefix =
      ShardedCheckpointPrefix(options_.output_dir, cut.global_step);
  DTF_ASSIGN_OR_RETURN(std::vector<ShardedIndexEntries> shards,
                       update.SaveShards(prefix));
  cut.ps_steps = update.shard_steps();
  const int num_ps = update.num_shards() - 1;
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> own,
                       ShardWriter::Open(prefix, num_ps, num_ps + 1));
  Bundle state =
      MakeCheckpointState(*layer_, cut, options_.model_toml, options_.origin);
  state.AddInt64s(std::string(kShardedNumPsEntry),
                  std::vector<int64_t>{num_ps});
  DTF_RETURN_IF_ERROR(own->AddBundle(state));
  DTF_ASSIGN_OR_RETURN(ShardedIndexEntries entries, own->Finish());
  shards.push_back(std::move(entries));
  DTF_RETURN_IF_ERROR(CommitShardedCheckpoint(
      options_.output_dir, cut.global_step, shards, options_.keep_checkpoints));
  checkpoint_path_ = prefix;
  return OkStatus();
}

}  // namespace dtf::runtime
