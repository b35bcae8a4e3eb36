// Running a model on the device a job or profile names (lib/base/
// device_name.h): the compute context, moving variables and optimizer state
// to it, and staging each batch's inputs there.
//
// On CUDA the feature transforms of a batch still run on the host (on the
// input thread, beside the previous step's GPU work); their results go to
// the device once per batch, from pinned buffers, and everything from the
// forward pass to the optimizer update then stays on the GPU.
#pragma once

#include <functional>
#include <vector>

#include "lib/base/device_name.h"
#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

// The context for `device`: the CPU with `threads` threads, or CUDA device
// N for "cuda:N" (0 for "cuda"; a launched task sees only the GPU its plan
// gave it through CUDA_VISIBLE_DEVICES). Unavailable, saying why, when the
// GPU cannot be used.
StatusOr<kernels::Context> MakeComputeContext(const DeviceName& device,
                                              int threads);

// Moves every variable of `model` and every optimizer state in `states`
// (either may be null) to `memory`; what is there already stays.
void MoveModel(kernels::Memory memory, Model* model,
               std::vector<kernels::OptimizerState>* states);

// Runs `write` (a checkpoint, an export) with the model and its optimizer
// states on the host: on a GPU they are brought back for the call and moved
// to the device again after it; on the CPU `write` just runs.
Status WithModelOnHost(const kernels::Context& ctx, Model* model,
                       std::vector<kernels::OptimizerState>* states,
                       const std::function<Status()>& write);

// Host buffers for batches that go to a GPU: page-locked, so that the copy
// to the device is asynchronous. No-op for a CPU context.
void PinInputs(const kernels::Context& ctx, ModelInputs* host);

// What the model reads for a batch transformed into `host`: `host` itself
// on the CPU; on CUDA, `*device` after the batch was copied there.
StatusOr<const ModelInputs*> StageInputs(const kernels::Context& ctx,
                                         const ModelInputs& host,
                                         ModelInputs* device);

// A PS worker's variables on its GPU for the length of a step: the
// parameter servers fill host tensors (the model's own), ToDevice copies
// them to device tensors it keeps and hands those to the model, ToHost hands
// the host tensors back (with the values the step changed in untrainable
// variables) and copies the step's gradients to `host_grads`. On a CPU
// context both are no-ops and the gradients are used where they are.
class DeviceMirror {
 public:
  Status ToDevice(const kernels::Context& ctx, Model* model);
  // `grads`: the step's gradients on the device (nullptr: none, as after an
  // evaluation). Returns what the PS client reads: `grads` itself on the
  // CPU, `host_grads` on CUDA.
  StatusOr<const std::vector<Gradient>*> ToHost(
      const kernels::Context& ctx, Model* model,
      const std::vector<Gradient>* grads, std::vector<Gradient>* host_grads);

 private:
  std::vector<kernels::Tensor> parked_;
  bool on_device_ = false;
};

// The host context that runs a CUDA task's feature transforms (the context
// itself for a CPU context).
const kernels::Context& HostContext(const kernels::Context& ctx);

}  // namespace dtf::runtime
