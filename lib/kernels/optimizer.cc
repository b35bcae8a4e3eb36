#include "lib/kernels/optimizer.h"

#include <algorithm>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/optimizers.h"
#include "lib/kernels/internal/apply.h"
#include "lib/kernels/internal/dispatch.h"

namespace dtf::kernels {

Tensor* OptimizerState::FindSlot(std::string_view name) {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return &slots_[i];
  }
  return nullptr;
}

void OptimizerState::MoveTo(Memory memory) {
  for (Tensor& slot : slots_) {
    if (slot.memory() != memory) slot = slot.CloneIn(memory);
  }
}

OptimizerState Optimizer::MakeState(std::span<const int64_t> shape,
                                    std::span<const SlotSpec> slots) const {
  OptimizerState state;
  state.optimizer_ = std::string(name());
  state.shape_.assign(shape.begin(), shape.end());
  for (const SlotSpec& spec : slots) {
    state.names_.emplace_back(spec.name);
    state.slots_.push_back(Tensor::Filled(shape, spec.initial_value));
  }
  return state;
}

namespace internal {
namespace {

Status CheckState(const Context& ctx, std::string_view optimizer,
                  const Tensor& param, const OptimizerState& state) {
  if (state.optimizer() != optimizer) {
    return InvalidArgumentError(StrCat(optimizer, ": the state was created by ",
                                       state.optimizer().empty()
                                           ? std::string("no optimizer")
                                           : state.optimizer()));
  }
  if (state.shape() != param.shape()) {
    return InvalidArgumentError(StrCat(
        optimizer, ": the state is for shape ", ShapeString(state.shape()),
        ", the variable is ", ShapeString(param.shape())));
  }
  DTF_RETURN_IF_ERROR(CheckDevice(ctx, param.device(), optimizer));
  for (int i = 0; i < state.num_slots(); ++i) {
    if (state.slot(i).shape() != param.shape()) {
      return InvalidArgumentError(
          StrCat(optimizer, ": slot \"", state.slot_name(i), "\" is ",
                 ShapeString(state.slot(i).shape()), ", the variable is ",
                 ShapeString(param.shape())));
    }
    DTF_RETURN_IF_ERROR(CheckDevice(ctx, state.slot(i).device(), optimizer));
  }
  return OkStatus();
}

// The first id that is out of [0, rows) or not above the one before it. On a
// CUDA context the ids are on the device and are checked there (ctx is used
// by that dispatch only, which a build without CUDA compiles away).
Status FirstSparseIdFault([[maybe_unused]] const Context& ctx,
                          const IdTensor& ids, int64_t rows,
                          cuda::SparseIdFault* fault) {
  DTF_CUDA_DISPATCH(ctx, cuda::FindSparseIdFault(ctx, ids, rows, fault));
  *fault = cuda::SparseIdFault{};
  const int64_t* data = ids.data();
  for (int64_t i = 0; i < ids.size(); ++i) {
    if (data[i] < 0 || data[i] >= rows || (i > 0 && data[i] <= data[i - 1])) {
      *fault = {i, data[i], i > 0 ? data[i - 1] : 0};
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace

Status CheckDenseApply(const Context& ctx, std::string_view optimizer,
                       const Tensor& param, const Tensor& grad,
                       const OptimizerState& state) {
  if (grad.shape() != param.shape()) {
    return InvalidArgumentError(
        StrCat(optimizer, ": gradient ", ShapeString(grad.shape()),
               " does not match the variable ", ShapeString(param.shape())));
  }
  DTF_RETURN_IF_ERROR(CheckDevice(ctx, grad.device(), optimizer));
  return CheckState(ctx, optimizer, param, state);
}

Status CheckSparseApply(const Context& ctx, std::string_view optimizer,
                        const Tensor& param, const SparseGrad& grad,
                        const OptimizerState& state) {
  if (param.rank() != 2) {
    return InvalidArgumentError(
        StrCat(optimizer, ": a sparse update needs a [V x D] variable, not ",
               ShapeString(param.shape())));
  }
  const int64_t u = grad.ids.size();
  if (grad.rows.rank() != 2 || grad.rows.rows() != u ||
      grad.rows.cols() != param.cols()) {
    return InvalidArgumentError(StrCat(
        optimizer, ": sparse gradient rows ", ShapeString(grad.rows.shape()),
        " must be [", u, ", ", param.cols(), "] for ", u, " ids"));
  }
  DTF_RETURN_IF_ERROR(CheckDevice(ctx, grad.rows.device(), optimizer));
  DTF_RETURN_IF_ERROR(CheckDevice(ctx, grad.ids.device(), optimizer));
  cuda::SparseIdFault fault;
  DTF_RETURN_IF_ERROR(FirstSparseIdFault(ctx, grad.ids, param.rows(), &fault));
  if (fault.index >= 0) {
    if (fault.id < 0 || fault.id >= param.rows()) {
      return InvalidArgumentError(StrCat(optimizer, ": sparse gradient id ",
                                         fault.id, " is out of range for ",
                                         param.rows(), " rows"));
    }
    return InvalidArgumentError(
        StrCat(optimizer, ": sparse gradient ids must be sorted and unique; ",
               fault.id, " follows ", fault.previous));
  }
  return CheckState(ctx, optimizer, param, state);
}

}  // namespace internal
}  // namespace dtf::kernels
