// Optimizers apply a gradient to a variable, keeping per-variable state (the
// "slots" Keras keeps: momentum, accumulators, moments) in an OptimizerState
// the caller owns, one per variable or per shard of one, so that a parameter
// server can hold it beside the shard it updates. The optimizers and their
// defaults are Keras' (sgd.h, adagrad.h, adam.h, ftrl.h); the update
// equations are written out in docs/kernels.md.
//
// Thread-safety: an Optimizer is immutable apart from set_learning_rate, which
// must not race with Apply; Apply calls on different states may run
// concurrently. An OptimizerState is used by one Apply at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

class OptimizerState {
 public:
  OptimizerState() = default;
  OptimizerState(OptimizerState&&) noexcept = default;
  OptimizerState& operator=(OptimizerState&&) noexcept = default;

  // The optimizer that created this state ("SGD", "Adam", ...).
  const std::string& optimizer() const { return optimizer_; }
  // The variable's shape; every slot has it.
  const std::vector<int64_t>& shape() const { return shape_; }
  // Apply calls made so far (Adam's bias correction counts them). Settable to
  // restore a checkpoint.
  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }

  int num_slots() const { return static_cast<int>(slots_.size()); }
  // Keras' slot names: "momentum", "accumulator", "m", "v", "linear".
  const std::string& slot_name(int i) const {
    return names_[static_cast<size_t>(i)];
  }
  Tensor& slot(int i) { return slots_[static_cast<size_t>(i)]; }
  const Tensor& slot(int i) const { return slots_[static_cast<size_t>(i)]; }
  // nullptr when there is no slot of that name.
  Tensor* FindSlot(std::string_view name);

  // Moves every slot to `memory` (a copy that waits until done; slots already
  // there stay as they are). A CUDA worker moves a variable's state to
  // Memory::kDevice once, before its first Apply on a CUDA context, which
  // requires the param, the gradient and every slot on the device.
  void MoveTo(Memory memory);

 private:
  friend class Optimizer;

  std::string optimizer_;
  std::vector<int64_t> shape_;
  int64_t step_ = 0;
  std::vector<std::string> names_;
  std::vector<Tensor> slots_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  virtual std::string_view name() const = 0;
  virtual float learning_rate() const = 0;
  virtual void set_learning_rate(float learning_rate) = 0;

  // A fresh state for a variable of `shape`, its slots initialised as the
  // optimizer defines.
  virtual OptimizerState CreateState(std::span<const int64_t> shape) const = 0;

  // Updates every element of *param from grad (param's shape).
  // InvalidArgument, with nothing updated, when shapes or devices differ or
  // `state` was made by another optimizer or for another shape.
  virtual Status ApplyDense(const Context& ctx, Tensor* param,
                            const Tensor& grad,
                            OptimizerState* state) const = 0;

  // Updates only the rows grad.ids of *param ([V x D]) and of the slots, from
  // grad.rows ([U x D]): TensorFlow's lazy sparse-apply semantics, where rows
  // without a gradient keep their values and state. grad.ids must be sorted,
  // unique and in [0, V), as EmbeddingLookupGrad makes them; otherwise
  // InvalidArgument with nothing updated. On a CUDA context the ids are
  // checked on the device, and the call waits for the stream to read the
  // result before it queues the update.
  virtual Status ApplySparse(const Context& ctx, Tensor* param,
                             const SparseGrad& grad,
                             OptimizerState* state) const = 0;

 protected:
  struct SlotSpec {
    std::string_view name;
    float initial_value;
  };
  OptimizerState MakeState(std::span<const int64_t> shape,
                           std::span<const SlotSpec> slots) const;
};

}  // namespace dtf::kernels
