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

StatusOr<EvalMetrics> Evaluate(const kernels::Context& ctx,
                               const FeatureLayer& layer, Model& model,
                               const std::vector<std::string>& files,
                               int64_t batch_size,
                               const std::atomic<bool>* cancel) {
  InputPipelineOptions options;
  options.files = files;
  options.features = layer.ParseSpecs(/*with_label=*/true);
  options.batch_size = batch_size;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(options));
  MetricSet metrics(model.spec().loss);
  Batch batch;
  ModelInputs host_inputs, device_inputs;
  PinInputs(ctx, &host_inputs);
  kernels::Tensor logits;
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      return CancelledError("evaluation cancelled");
    }
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(
        layer.Transform(HostContext(ctx), batch, true, &host_inputs));
    DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                         StageInputs(ctx, host_inputs, &device_inputs));
    const ModelInputs& inputs = *staged;
    DTF_RETURN_IF_ERROR(model.Forward(ctx, inputs, false, &logits));
    DTF_RETURN_IF_ERROR(metrics.Update(ctx, logits, inputs));
  }
  return metrics.Result();
}

}  // namespace dtf::runtime
