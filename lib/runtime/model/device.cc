#include "lib/runtime/model/device.h"

#include <utility>

#include "lib/base/strings.h"
#include "lib/kernels/transfer.h"

namespace dtf::runtime {

StatusOr<kernels::Context> MakeComputeContext(const DeviceName& device,
                                              int threads) {
  if (!device.cuda) return kernels::Context::Cpu(threads);
  const int ordinal = device.ordinal < 0 ? 0 : device.ordinal;
  StatusOr<kernels::Context> ctx = kernels::Context::Cuda(ordinal);
  if (!ctx.ok()) {
    return Status(ctx.status().code(),
                  ToAbsl(StrCat("device ", DeviceNameString(device), ": ",
                                Message(ctx.status()))));
  }
  return ctx;
}

void MoveModel(kernels::Memory memory, Model* model,
               std::vector<kernels::OptimizerState>* states) {
  if (model != nullptr) {
    for (Variable& v : model->variables()) {
      if (v.value.memory() != memory) v.value = v.value.CloneIn(memory);
    }
  }
  if (states != nullptr) {
    for (kernels::OptimizerState& s : *states) s.MoveTo(memory);
  }
}

Status WithModelOnHost(const kernels::Context& ctx, Model* model,
                       std::vector<kernels::OptimizerState>* states,
                       const std::function<Status()>& write) {
  if (ctx.device() == kernels::Device::kCpu) return write();
  DTF_RETURN_IF_ERROR(ctx.Synchronize());
  MoveModel(kernels::Memory::kHost, model, states);
  Status st = write();
  MoveModel(ctx.memory(), model, states);
  return st;
}

void PinInputs(const kernels::Context& ctx, ModelInputs* host) {
  if (ctx.device() != kernels::Device::kCuda) return;
  const kernels::Memory pinned = kernels::Memory::kPinnedHost;
  host->deep_dense.ResizeIn(pinned, host->deep_dense.shape());
  host->wide_dense.ResizeIn(pinned, host->wide_dense.shape());
  host->labels.ResizeIn(pinned, host->labels.shape());
  host->class_labels.ResizeIn(pinned, host->class_labels.size());
}

StatusOr<const ModelInputs*> StageInputs(const kernels::Context& ctx,
                                         const ModelInputs& host,
                                         ModelInputs* device) {
  if (ctx.device() != kernels::Device::kCuda) return &host;
  device->rows = host.rows;
  DTF_RETURN_IF_ERROR(
      kernels::CopyToDevice(ctx, host.deep_dense, &device->deep_dense));
  DTF_RETURN_IF_ERROR(
      kernels::CopyToDevice(ctx, host.wide_dense, &device->wide_dense));
  device->ids.resize(host.ids.size());
  for (size_t i = 0; i < host.ids.size(); ++i) {
    DTF_RETURN_IF_ERROR(
        kernels::CopyToDevice(ctx, host.ids[i], &device->ids[i]));
  }
  DTF_RETURN_IF_ERROR(kernels::CopyToDevice(ctx, host.labels, &device->labels));
  DTF_RETURN_IF_ERROR(
      kernels::CopyToDevice(ctx, host.class_labels, &device->class_labels));
  return device;
}

Status DeviceMirror::ToDevice(const kernels::Context& ctx, Model* model) {
  if (ctx.device() != kernels::Device::kCuda || on_device_) return OkStatus();
  std::vector<Variable>& vars = model->variables();
  parked_.resize(vars.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    DTF_RETURN_IF_ERROR(kernels::CopyToDevice(ctx, vars[v].value, &parked_[v]));
    std::swap(vars[v].value, parked_[v]);
  }
  on_device_ = true;
  return OkStatus();
}

StatusOr<const std::vector<Gradient>*> DeviceMirror::ToHost(
    const kernels::Context& ctx, Model* model,
    const std::vector<Gradient>* grads, std::vector<Gradient>* host_grads) {
  if (ctx.device() != kernels::Device::kCuda) return grads;
  if (on_device_) {
    std::vector<Variable>& vars = model->variables();
    for (size_t v = 0; v < vars.size(); ++v) {
      std::swap(vars[v].value, parked_[v]);
      if (!vars[v].trainable) {
        DTF_RETURN_IF_ERROR(
            kernels::CopyToHost(ctx, parked_[v], &vars[v].value));
      }
    }
    on_device_ = false;
  }
  if (grads == nullptr) return host_grads;
  host_grads->resize(grads->size());
  for (size_t v = 0; v < grads->size(); ++v) {
    const Gradient& g = (*grads)[v];
    Gradient& h = (*host_grads)[v];
    DTF_RETURN_IF_ERROR(kernels::CopyToHost(ctx, g.dense, &h.dense));
    DTF_RETURN_IF_ERROR(kernels::CopyToHost(ctx, g.sparse.ids, &h.sparse.ids));
    DTF_RETURN_IF_ERROR(
        kernels::CopyToHost(ctx, g.sparse.rows, &h.sparse.rows));
  }
  return host_grads;
}

const kernels::Context& HostContext(const kernels::Context& ctx) {
  if (ctx.device() == kernels::Device::kCpu) return ctx;
  static const kernels::Context host = kernels::Context::Cpu(1);
  return host;
}

}  // namespace dtf::runtime
