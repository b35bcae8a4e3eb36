// The update of one-process training: the step's gradients applied to the
// variables where they are.
#include <memory>
#include <utility>
#include <vector>

#include "lib/runtime/train/update.h"
#include "lib/runtime/train/update_replica.h"

namespace dtf::runtime {
namespace {

class LocalUpdate : public ReplicaUpdate {
 public:
  using ReplicaUpdate::ReplicaUpdate;

  Status Apply(const PreparedBatch&, float, std::vector<Gradient>* grads,
               const PreparedBatch&) override {
    std::vector<Variable>& vars = model_->variables();
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!vars[i].trainable) continue;
      const kernels::Optimizer& opt = optimizer(vars[i]);
      if (vars[i].sparse) {
        DTF_RETURN_IF_ERROR(opt.ApplySparse(ctx_, &vars[i].value,
                                            (*grads)[i].sparse, &states_[i]));
      } else {
        DTF_RETURN_IF_ERROR(opt.ApplyDense(ctx_, &vars[i].value,
                                           (*grads)[i].dense, &states_[i]));
      }
    }
    ++step_;
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<Update> MakeLocalUpdate(
    const kernels::Context& ctx, Model* model, Optimizers optimizers,
    std::vector<kernels::OptimizerState> states, int64_t global_step) {
  return std::make_unique<LocalUpdate>(ctx, model, std::move(optimizers),
                                       std::move(states), global_step);
}

}  // namespace dtf::runtime
