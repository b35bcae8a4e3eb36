// ParamStore's restore (param_store.h): this PS's rows of every variable
// and optimizer slot, and its global step, from a checkpoint.dtf or from a
// sharded checkpoint that any number of parameter servers wrote — each of
// its slices read front to back in chunks, only this PS's rows kept, so a
// PS never holds more than its share and a chunk.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/param_store_shard.h"

namespace dtf::runtime {
namespace {

constexpr size_t kRestoreChunkBytes = size_t{4} << 20;

StatusOr<std::vector<int64_t>> ReadInt64s(const ShardedCheckpointReader& r,
                                          std::string_view key) {
  DTF_ASSIGN_OR_RETURN(const std::string bytes, r.Read(key));
  std::vector<int64_t> v(bytes.size() / 8);
  std::memcpy(v.data(), bytes.data(), v.size() * 8);
  return v;
}

// Copies this PS's rows of the checkpoint's `key` (written under a
// partition over `old_ps` parameter servers) into `out`, the shard's
// local rows.
Status RestoreRows(const ShardedCheckpointReader& reader,
                   const std::string& key, const StoreShard& s,
                   const Partition& now, int p, int old_ps,
                   kernels::Tensor* out) {
  const std::string where = ShardedIndexPath(reader.prefix());
  const ShardedEntry* full = reader.Find(key);
  if (full == nullptr) {
    return FailedPreconditionError(
        StrCat(where, ": no entry \"", key,
               "\"; the checkpoint does not match the job"));
  }
  if (full->shape != s.shape || full->dtype != TfDtype::kFloat ||
      full->slices.empty()) {
    return FailedPreconditionError(StrCat(
        where, ": \"", key, "\" has shape ", kernels::ShapeString(full->shape),
        ", the job's model needs ", kernels::ShapeString(s.shape),
        "; the checkpoint does not match the job"));
  }
  const Partition old{old_ps};
  const int64_t rows = s.shape[0];
  const size_t row_bytes = size_t(s.cols) * 4;
  int64_t copied = 0;
  for (size_t i = 0; i < full->slices.size(); ++i) {
    const ShardedEntry::Slice slice = full->slices[i];
    if (s.sparse && slice.length != old.SparseRows(rows, int(i))) {
      return DataLossError(StrCat(where, ": \"", key, "\": slice ", i,
                                  " does not hold the rows of ps:", i, " of ",
                                  old_ps));
    }
    if (s.sparse && old_ps == now.num_ps && int(i) != p) continue;
    if (!s.sparse &&
        (slice.start >= s.end || slice.start + slice.length <= s.begin)) {
      continue;
    }
    DTF_RETURN_IF_ERROR(reader.StreamSlice(
        key, slice, kRestoreChunkBytes,
        [&](int64_t offset, std::string_view bytes) {
          const int64_t first = offset / int64_t(row_bytes);
          const int64_t n = int64_t(bytes.size() / row_bytes);
          for (int64_t r = 0; r < n; ++r) {
            int64_t local = -1;
            if (s.sparse) {
              const int64_t global = old.GlobalRow(first + r, int(i));
              if (now.Owner(global) == p) local = now.LocalRow(global);
            } else {
              const int64_t global = slice.start + first + r;
              if (global >= s.begin && global < s.end) local = global - s.begin;
            }
            if (local < 0 || local >= out->rows()) continue;
            std::memcpy(out->data() + local * s.cols,
                        bytes.data() + size_t(r) * row_bytes, row_bytes);
            ++copied;
          }
          return OkStatus();
        }));
  }
  if (copied != out->rows()) {
    return DataLossError(StrCat(where, ": \"", key, "\" holds ", copied,
                                " of the ", out->rows(), " rows of ps:", p));
  }
  return OkStatus();
}

// This PS's optimizer update count of a variable: its own when the
// checkpoint is of as many parameter servers, else the largest.
StatusOr<int64_t> RestoreStep(const ShardedCheckpointReader& reader,
                              const std::string& key, int p, int num_ps,
                              int old_ps) {
  const ShardedEntry* full = reader.Find(key);
  if (full == nullptr || full->dtype != TfDtype::kInt64) {
    return FailedPreconditionError(
        StrCat(ShardedIndexPath(reader.prefix()), ": no entry \"", key,
               "\"; the checkpoint does not match the job"));
  }
  std::vector<int64_t> steps(size_t(std::max(old_ps, 0)), 0);
  for (const ShardedEntry::Slice& slice : full->slices) {
    DTF_RETURN_IF_ERROR(reader.StreamSlice(
        key, slice, 1024, [&](int64_t offset, std::string_view bytes) {
          for (size_t k = 0; k + 8 <= bytes.size(); k += 8) {
            const size_t at = size_t(slice.start) + size_t(offset) / 8 + k / 8;
            if (at < steps.size()) std::memcpy(&steps[at], bytes.data() + k, 8);
          }
          return OkStatus();
        }));
  }
  if (old_ps == num_ps) return steps[size_t(p)];
  return steps.empty() ? 0 : *std::max_element(steps.begin(), steps.end());
}

}  // namespace

Status ParamStore::Restore(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) &&
      std::filesystem::exists(ShardedIndexPath(path), ec)) {
    return RestoreSharded(path);
  }
  return RestoreBundle(path);
}

Status ParamStore::RestoreSharded(const std::string& prefix) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardedCheckpointReader> reader,
                       ShardedCheckpointReader::Open(prefix));
  DTF_ASSIGN_OR_RETURN(const std::vector<int64_t> num_ps,
                       ReadInt64s(*reader, kShardedNumPsEntry));
  if (num_ps.size() != 1 || num_ps[0] < 1 || num_ps[0] > (1 << 20)) {
    return DataLossError(StrCat(ShardedIndexPath(prefix), ": malformed \"",
                                kShardedNumPsEntry, "\""));
  }
  const int old_ps = int(num_ps[0]);
  const int p = options_.index;
  for (auto& shard : shards_) {
    Shard& s = *shard;
    DTF_RETURN_IF_ERROR(RestoreRows(*reader, CheckpointVariableKey(s.name), s,
                                    partition_, p, old_ps, &s.value));
    if (!s.trainable) continue;
    for (int k = 0; k < s.state.num_slots(); ++k) {
      DTF_RETURN_IF_ERROR(
          RestoreRows(*reader, CheckpointSlotKey(s.name, s.state.slot_name(k)),
                      s, partition_, p, old_ps, &s.state.slot(k)));
    }
    DTF_ASSIGN_OR_RETURN(const int64_t step,
                         RestoreStep(*reader, CheckpointStepKey(s.name), p,
                                     options_.num_ps, old_ps));
    s.state.set_step(step);
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<int64_t> global,
                       ReadInt64s(*reader, kCheckpointGlobalStepEntry));
  if (global.size() != 1) {
    return DataLossError(
        StrCat(ShardedIndexPath(prefix), ": malformed \"train/global_step\""));
  }
  global_step_ = global[0];
  if (reader->Find(kCheckpointPsStepsEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(const std::vector<int64_t> steps,
                         ReadInt64s(*reader, kCheckpointPsStepsEntry));
    if (steps.size() == size_t(old_ps) && old_ps == options_.num_ps) {
      global_step_ = steps[size_t(p)];
    } else if (!steps.empty()) {
      global_step_ = *std::max_element(steps.begin(), steps.end());
    }
  }
  return OkStatus();
}

Status ParamStore::RestoreBundle(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(Bundle bundle, Bundle::ReadFile(path));
  const int p = options_.index;
  // Copies this PS's rows of `all` (the whole variable) into `local`.
  auto take = [&](const Shard& s, const kernels::Tensor& all,
                  kernels::Tensor* local) {
    for (int64_t r = 0; r < s.value.rows(); ++r) {
      const int64_t global =
          s.sparse ? partition_.GlobalRow(r, p) : s.begin + r;
      std::memcpy(local->data() + r * s.cols, all.data() + global * s.cols,
                  size_t(s.cols) * 4);
    }
  };
  for (auto& shard : shards_) {
    Shard& s = *shard;
    DTF_ASSIGN_OR_RETURN(kernels::Tensor all,
                         ReadCheckpointTensor(bundle, s.name, "", s.shape));
    take(s, all, &s.value);
    if (!s.trainable) continue;
    for (int k = 0; k < s.state.num_slots(); ++k) {
      DTF_ASSIGN_OR_RETURN(
          kernels::Tensor slot,
          ReadCheckpointTensor(bundle, s.name, s.state.slot_name(k), s.shape));
      take(s, slot, &s.state.slot(k));
    }
    DTF_ASSIGN_OR_RETURN(int64_t step, ReadCheckpointStep(bundle, s.name));
    s.state.set_step(step);
  }
  DTF_ASSIGN_OR_RETURN(global_step_, ReadCheckpointStep(bundle, ""));
  // A distributed checkpoint records each PS's own step.
  if (bundle.Find(kCheckpointPsStepsEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(std::vector<int64_t> steps,
                         bundle.GetInt64s(kCheckpointPsStepsEntry));
    // A checkpoint of another number of PS: every shard is at least at
    // the largest step (its rows come from the whole variables).
    if (steps.size() == size_t(options_.num_ps)) {
      global_step_ = steps[size_t(p)];
    } else if (!steps.empty()) {
      global_step_ = *std::max_element(steps.begin(), steps.end());
    }
  }
  return OkStatus();
}

}  // namespace dtf::runtime
