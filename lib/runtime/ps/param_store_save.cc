// ParamStore::SaveShard (param_store.h): this PS's shard of a sharded
// checkpoint, written straight from the variables' memory.
#include <chrono>
#include <memory>
#include <string_view>
#include <thread>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/shard_writer.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/param_store_shard.h"

namespace dtf::runtime {
namespace {

std::string_view Bytes(const kernels::Tensor& t) {
  return std::string_view(reinterpret_cast<const char*>(t.data()),
                          size_t(t.size()) * sizeof(float));
}

// Where this PS's rows of `s` sit in the saved variable: dense ones at
// their global rows; sparse ones after the rows of every PS before it (the
// order in which TensorFlow concatenates the partitions of a variable
// looked up with partition_strategy "mod").
int64_t SliceStart(const StoreShard& s, const Partition& partition, int p) {
  if (!s.sparse) return s.begin;
  int64_t start = 0;
  for (int q = 0; q < p; ++q) start += partition.SparseRows(s.shape[0], q);
  return start;
}

}  // namespace

StatusOr<SaveShardResult> ParamStore::SaveShard(
    const SaveShardRequest& request) {
  std::unique_lock<std::mutex> lock(mu_);
  SeenLocked(request.worker);
  const int64_t min_step =
      request.min_step > global_step_ + 1 ? 0 : request.min_step;
  while (global_step_ < min_step && !shutdown_) {
    step_cv_.wait_for(lock, std::chrono::milliseconds(100));
    MaybeApplyLocked();
  }
  if (global_step_ < min_step) return ShutDownLocked();
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<ShardWriter> writer,
      ShardWriter::Open(request.prefix, request.shard, request.num_shards));
  if (options_.save_delay_ms > 0) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(options_.save_delay_ms));
  }
  const int p = options_.index;
  const std::vector<int64_t> steps_shape = {options_.num_ps};
  for (const auto& shard : shards_) {
    const StoreShard& s = *shard;
    const int64_t start = SliceStart(s, partition_, p);
    const int64_t rows = s.value.rows();
    DTF_RETURN_IF_ERROR(writer->AddSlice(
        request.variables_only ? s.name : CheckpointVariableKey(s.name),
        TfDtype::kFloat, s.shape, start, rows, Bytes(s.value)));
    if (!s.trainable || request.variables_only) continue;
    for (int k = 0; k < s.state.num_slots(); ++k) {
      DTF_RETURN_IF_ERROR(writer->AddSlice(
          CheckpointSlotKey(s.name, s.state.slot_name(k)), TfDtype::kFloat,
          s.shape, start, rows, Bytes(s.state.slot(k))));
    }
    const int64_t step = s.state.step();
    DTF_RETURN_IF_ERROR(writer->AddSlice(
        CheckpointStepKey(s.name), TfDtype::kInt64, steps_shape, p, 1,
        std::string_view(reinterpret_cast<const char*>(&step), 8)));
  }
  SaveShardResult result;
  result.global_step = global_step_;
  result.positions = positions_;
  DTF_ASSIGN_OR_RETURN(result.entries, writer->Finish());
  SeenLocked(request.worker);
  return result;
}

}  // namespace dtf::runtime
