#include "lib/runtime/train/evaluator.h"

#include "lib/data/input_pipeline.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/loss.h"
#include "lib/runtime/model/device.h"

namespace dtf::runtime {

std::optional<double> EvalMetrics::Get(std::string_view name) const {
  for (const auto& [key, value] : values) {
    if (key == name) return value;
  }
  return std::nullopt;
}

Status MetricSet::Update(const kernels::Context& ctx,
                         const kernels::Tensor& logits,
                         const ModelInputs& inputs) {
  examples_ += inputs.rows;
  switch (loss_) {
    case Loss::kBinaryCrossentropy:
      DTF_RETURN_IF_ERROR(kernels::Sigmoid(ctx, logits, &scratch_));
      DTF_RETURN_IF_ERROR(accuracy_.Update(ctx, scratch_, inputs.labels));
      DTF_RETURN_IF_ERROR(auc_.Update(ctx, scratch_, inputs.labels));
      DTF_RETURN_IF_ERROR(
          precision_recall_.Update(ctx, scratch_, inputs.labels));
      DTF_RETURN_IF_ERROR(
          average_precision_.Update(ctx, scratch_, inputs.labels));
      return log_loss_.Update(ctx, scratch_, inputs.labels);
    case Loss::kSoftmaxCrossentropy: {
      DTF_ASSIGN_OR_RETURN(float loss,
                           kernels::SoftmaxCrossEntropy(
                               ctx, logits, inputs.class_labels, &scratch_));
      softmax_loss_sum_ += double(loss) * double(inputs.rows);
      return class_accuracy_.Update(ctx, logits, inputs.class_labels);
    }
    case Loss::kSquaredError:
      break;
  }
  return squared_.Update(ctx, logits, inputs.labels);
}

EvalMetrics MetricSet::Result() const {
  EvalMetrics m;
  m.examples = examples_;
  switch (loss_) {
    case Loss::kBinaryCrossentropy:
      m.values = {{"loss", log_loss_.Result()},
                  {"accuracy", accuracy_.Result()},
                  {"auc", auc_.Result()},
                  {"precision", precision_recall_.Precision()},
                  {"recall", precision_recall_.Recall()},
                  {"pr_auc", average_precision_.Result()}};
      if (precision_recall_.count() > 0) {
        m.positive_rate = precision_recall_.PositiveRate();
      }
      break;
    case Loss::kSoftmaxCrossentropy:
      m.values = {
          {"loss", examples_ > 0 ? softmax_loss_sum_ / double(examples_) : 0.0},
          {"accuracy", class_accuracy_.Result()}};
      break;
    case Loss::kSquaredError:
      m.values = {{"loss", squared_.MeanSquaredError()},
                  {"rmse", squared_.RootMeanSquaredError()}};
      break;
  }
  return m;
}

namespace {

int64_t InputBytes(const ModelInputs& in) {
  int64_t n = (in.deep_dense.size() + in.wide_dense.size() + in.labels.size()) *
                  int64_t{sizeof(float)} +
              in.class_labels.size() * int64_t{sizeof(int64_t)};
  for (const kernels::SparseIds& ids : in.ids) {
    n += (ids.ids.size() + ids.row_splits.size()) * int64_t{sizeof(int64_t)} +
         ids.weights.size() * int64_t{sizeof(float)};
  }
  return n;
}

// Inference and metrics over one batch of host inputs, the model first
// made ready for it by `prepare` when given.
Status EvaluateBatch(const kernels::Context& ctx, Model& model,
                     const ModelInputs& batch, ModelInputs* device_inputs,
                     kernels::Tensor* logits, MetricSet* metrics,
                     const EvalPrepare& prepare) {
  const ModelInputs* host = &batch;
  if (prepare) {
    DTF_ASSIGN_OR_RETURN(host, prepare(batch));
  }
  DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                       StageInputs(ctx, *host, device_inputs));
  DTF_RETURN_IF_ERROR(model.Forward(ctx, *staged, false, logits));
  return metrics->Update(ctx, *logits, *staged);
}

}  // namespace

StatusOr<EvalMetrics> Evaluate(const kernels::Context& ctx,
                               const FeatureLayer& layer, Model& model,
                               const std::vector<std::string>& files,
                               int64_t batch_size,
                               const std::atomic<bool>* cancel,
                               EvalInputCache* cache,
                               const EvalPrepare& prepare) {
  MetricSet metrics(model.spec().loss);
  ModelInputs host_inputs, device_inputs;
  kernels::Tensor logits;
  if (cache != nullptr && cache->complete) {
    for (const ModelInputs& cached : cache->batches) {
      if (cancel != nullptr && cancel->load()) {
        return CancelledError("evaluation cancelled");
      }
      DTF_RETURN_IF_ERROR(EvaluateBatch(ctx, model, cached, &device_inputs,
                                        &logits, &metrics, prepare));
    }
    return metrics.Result();
  }
  bool keep =
      cache != nullptr && !cache->over_budget && cache->budget_bytes > 0;
  if (keep) {
    cache->batches.clear();
    cache->bytes = 0;
  }
  InputPipelineOptions options;
  options.files = files;
  options.features = layer.ParseSpecs(/*with_label=*/true);
  options.batch_size = batch_size;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(options));
  Batch batch;
  PinInputs(ctx, &host_inputs);
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      if (keep) cache->batches.clear();
      return CancelledError("evaluation cancelled");
    }
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(
        layer.Transform(HostContext(ctx), batch, true, &host_inputs));
    DTF_RETURN_IF_ERROR(EvaluateBatch(ctx, model, host_inputs, &device_inputs,
                                      &logits, &metrics, prepare));
    if (!keep) continue;
    cache->bytes += InputBytes(host_inputs);
    if (cache->bytes > cache->budget_bytes) {
      keep = false;
      cache->over_budget = true;
      cache->batches.clear();
      continue;
    }
    cache->batches.push_back(std::move(host_inputs));
    host_inputs = ModelInputs();
    PinInputs(ctx, &host_inputs);
  }
  if (keep) cache->complete = true;
  return metrics.Result();
}

}  // namespace dtf::runtime
