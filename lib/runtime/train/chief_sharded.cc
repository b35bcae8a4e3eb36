// Chief::WriteShardedCheckpoint, WriteShardedBest and ExportSharded
// (chief.h): the checkpoints, best model and export of a run whose
// variables live on parameter servers, written without gathering them.
#include <chrono>
#include <filesystem>
#include <utility>

#include "fmt/format.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/export/sharded_export.h"
#include "lib/runtime/train/best_eval.h"
#include "lib/runtime/train/chief.h"

namespace dtf::runtime {

Status Chief::WriteShardedCheckpoint(Update& update, TrainState cut) {
  const auto start = std::chrono::steady_clock::now();
  const std::string prefix =
      ShardedCheckpointPrefix(options_.output_dir, cut.global_step);
  DTF_ASSIGN_OR_RETURN(std::vector<ShardedIndexEntries> shards,
                       update.SaveShards(prefix, /*variables_only=*/false));
  cut.ps_steps = update.shard_steps();
  TakeCommittedPositions(update, &cut);
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
  // Its size and time, beside what `cp` of the same bytes takes
  // (bench/sharded).
  int64_t bytes = 0;
  std::error_code ec;
  for (int k = 0; k <= num_ps; ++k) {
    const auto size =
        std::filesystem::file_size(ShardedDataPath(prefix, k, num_ps + 1), ec);
    if (!ec) bytes += int64_t(size);
  }
  hooks_.Note(fmt::format(
      "checkpoint {} written: {:.1f} MB in {:.2f} s", prefix,
      double(bytes) / 1e6,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count()));
  return OkStatus();
}

Status Chief::WriteShardedBest(Update& update, const TrainState& state) {
  const int num_ps = update.num_shards() - 1;
  const std::string dir =
      std::filesystem::path(sharded_best_).parent_path().string();
  const std::string name =
      std::filesystem::path(sharded_best_).filename().string();
  return ReplaceDirectory(dir, [&](const std::string& staging) -> Status {
    const std::string prefix = StrCat(staging, "/", name);
    DTF_ASSIGN_OR_RETURN(std::vector<ShardedIndexEntries> shards,
                         update.SaveShards(prefix, /*variables_only=*/true));
    TrainState cut = state;
    cut.ps_steps = update.shard_steps();
    Bundle own =
        MakeCheckpointState(*layer_, cut, options_.model_toml, options_.origin);
    if (tracker_.best()) AddBestEval(*tracker_.best(), &own);
    return CommitVariableShards(prefix, *layer_, num_ps, own,
                                std::move(shards));
  });
}

Status Chief::ExportSharded(Update& update, const std::string& dir) {
  const int num_ps = update.num_shards() - 1;
  const Model* layout = update.layout();
  if (layout == nullptr) {
    return InternalError("a sharded run's update has no model layout");
  }
  std::error_code ec;
  if (tracker_.best() && !tracker_.last_was_best() &&
      std::filesystem::exists(ShardedIndexPath(sharded_best_), ec)) {
    return ExportShardedCopy(dir, options_.model_toml, *layer_, *layout, num_ps,
                             sharded_best_);
  }
  return ExportShardedModel(dir, options_.model_toml, *layer_, *layout, num_ps,
                            [&](const std::string& prefix) {
                              return update.SaveShards(prefix,
                                                       /*variables_only=*/true);
                            });
}

}  // namespace dtf::runtime
