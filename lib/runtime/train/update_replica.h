// The base of the updates whose process holds the whole model on its
// compute device with its optimizer states (update_local.cc,
// update_allreduce.cc): the whole model is always at hand, so gathering it
// for the chief is no more than bringing it to the host for a moment.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/train/update.h"

namespace dtf::runtime {

class ReplicaUpdate : public Update {
 public:
  // Moves the model's variables and `states` (parallel to them) to ctx's
  // memory.
  ReplicaUpdate(const kernels::Context& ctx, Model* model,
                Optimizers optimizers,
                std::vector<kernels::OptimizerState> states,
                int64_t global_step)
      : ctx_(ctx),
        model_(model),
        optimizers_(std::move(optimizers)),
        states_(std::move(states)),
        step_(global_step) {
    MoveModel(ctx_.memory(), model_, &states_);
  }

  int64_t global_step() const override { return step_; }
  Status Pull(const PreparedBatch&) override { return OkStatus(); }
  Status WithDeviceModel(const std::function<Status(Model&)>& use) override {
    return use(*model_);
  }
  Status WithHostModel(bool, const HostUse& use) override {
    return WithModelOnHost(ctx_, model_, &states_,
                           [&] { return use(model_, states_); });
  }

 protected:
  const kernels::Optimizer& optimizer(const Variable& v) const {
    return optimizers_.For(v.part);
  }

  const kernels::Context& ctx_;
  Model* model_;
  const Optimizers optimizers_;
  std::vector<kernels::OptimizerState> states_;
  int64_t step_;
};

}  // namespace dtf::runtime
