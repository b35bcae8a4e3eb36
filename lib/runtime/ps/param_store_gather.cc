// ParamStore::Gather (param_store.h): a pull's rows, cut into pieces of at
// most kMaxPieceBytes and copied straight into the caller's sink.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "lib/base/strings.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/param_store_shard.h"
#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf::runtime {
namespace {

// Rows of `cols` floats per piece, as AppendDensePieces cuts them.
int64_t GatherRowsPerPiece(int64_t cols) {
  return std::max<int64_t>(1,
                           kMaxPieceBytes / (4 * std::max<int64_t>(cols, 1)));
}

}  // namespace

Status ParamStore::CheckGatherLocked(const GatherRequest& request) {
  const int index = options_.index;
  for (const std::string_view name : request.dense) {
    Shard* s = FindLocked(name);
    if (s == nullptr || s->sparse) {
      return InvalidArgumentError(
          StrCat("no dense variable \"", name, "\" on ps:", index));
    }
  }
  for (const GatherRequest::Sparse& sparse : request.sparse) {
    Shard* s = FindLocked(sparse.name);
    if (s == nullptr || !s->sparse) {
      return InvalidArgumentError(
          StrCat("no sparse variable \"", sparse.name, "\" on ps:", index));
    }
    if (sparse.all) continue;
    for (const int64_t id : sparse.ids) {
      if (id < 0 || partition_.Owner(id) != index ||
          partition_.LocalRow(id) >= s->value.rows()) {
        return InvalidArgumentError(StrCat("variable \"", s->name, "\": row ",
                                           id, " is not on ps:", index));
      }
    }
  }
  return OkStatus();
}

bool ParamStore::EmitLocked(Shard& s, const GatherRequest::Sparse* sparse,
                            bool with_slots, PieceSink& sink,
                            GatherResult* result) {
  const int64_t cols = s.cols;
  const int64_t step = GatherRowsPerPiece(cols);
  const size_t row_bytes = size_t(cols) * 4;
  std::vector<int64_t> all;
  std::span<const int64_t> ids;
  if (sparse != nullptr) {
    ids = sparse->ids;
    if (sparse->all) {
      all.resize(size_t(s.value.rows()));
      for (int64_t r = 0; r < s.value.rows(); ++r) {
        all[size_t(r)] = partition_.GlobalRow(r, options_.index);
      }
      ids = all;
    }
  }
  // The values, then with slots each optimizer slot, the same rows.
  auto emit = [&](const kernels::Tensor& t, std::string_view slot) {
    PieceInfo info;
    info.name = s.name;
    info.slot = slot;
    info.shape = s.shape;
    info.cols = cols;
    if (sparse == nullptr) {
      // A PS holding no rows of the variable still answers with one empty
      // piece.
      const int64_t rows = s.value.rows();
      for (int64_t r = 0; r < rows || r == 0; r += step) {
        info.row_offset = s.begin + r;
        info.rows = std::min(step, rows - r);
        std::byte* dst = sink.Piece(info);
        if (dst == nullptr) return false;
        if (info.rows > 0) {
          std::memcpy(dst, t.data() + r * cols, size_t(info.rows) * row_bytes);
        }
        if (rows == 0) break;
      }
      return true;
    }
    const int64_t n = int64_t(ids.size());
    for (int64_t r = 0; r < n; r += step) {
      info.rows = std::min(step, n - r);
      info.ids = ids.subspan(size_t(r), size_t(info.rows));
      std::byte* dst = sink.Piece(info);
      if (dst == nullptr) return false;
      for (int64_t i = 0; i < info.rows; ++i) {
        std::memcpy(dst + size_t(i) * row_bytes,
                    t.data() + partition_.LocalRow(info.ids[size_t(i)]) * cols,
                    row_bytes);
      }
    }
    return true;
  };
  if (!emit(s.value, "")) return false;
  if (!with_slots || !s.trainable) return true;
  result->slot_steps[s.name] = s.state.step();
  for (int k = 0; k < s.state.num_slots(); ++k) {
    if (!emit(s.state.slot(k), s.state.slot_name(k))) return false;
  }
  return true;
}

StatusOr<GatherResult> ParamStore::Gather(
    const GatherRequest& request, PieceSink& sink,
    const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> lock(mu_);
  SeenLocked(request.worker);
  // A worker waits at most for the step after this one. Asking for a later
  // one means this PS went back (restarted from a checkpoint) since the
  // worker last saw it: it gets the current values at once, and its step.
  const int64_t min_step =
      request.min_step > global_step_ + 1 ? 0 : request.min_step;
  if (global_step_ < min_step && !shutdown_) {
    const auto since = std::chrono::steady_clock::now();
    while (global_step_ < min_step && !shutdown_) {
      if (cancelled && cancelled()) return CancelledError("pull cancelled");
      step_cv_.wait_for(lock, std::chrono::milliseconds(100));
      MaybeApplyLocked();
    }
    if (barrier_waits_ms_.size() < kMaxBarrierWaits) {
      barrier_waits_ms_.push_back(std::chrono::duration<float, std::milli>(
                                      std::chrono::steady_clock::now() - since)
                                      .count());
    }
  }
  // A sync step that will never come: the pull would hand out values no
  // step is of. (A pull of the current values still answers: the chief's
  // last checkpoint may come after it sent the parameter servers home.)
  if (global_step_ < min_step) return ShutDownLocked();
  DTF_RETURN_IF_ERROR(CheckGatherLocked(request));
  GatherResult result;
  result.global_step = global_step_;
  if (request.slots) result.positions = positions_;
  for (const std::string_view name : request.dense) {
    if (!EmitLocked(*FindLocked(name), nullptr, request.slots, sink, &result)) {
      return CancelledError("the pull's receiver gave up");
    }
  }
  for (const GatherRequest::Sparse& sparse : request.sparse) {
    if (!EmitLocked(*FindLocked(sparse.name), &sparse, request.slots, sink,
                    &result)) {
      return CancelledError("the pull's receiver gave up");
    }
  }
  return result;
}

}  // namespace dtf::runtime
