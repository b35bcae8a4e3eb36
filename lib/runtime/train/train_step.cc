#include "lib/runtime/train/train_step.h"

#include "lib/data/input_pipeline.h"
#include "lib/kernels/feature_transforms.h"
#include "lib/kernels/loss.h"

namespace dtf::runtime {

StatusOr<float> ComputeLoss(const kernels::Context& ctx, Loss loss,
                            const kernels::Tensor& logits,
                            const ModelInputs& inputs,
                            kernels::Tensor* dlogits) {
  switch (loss) {
    case Loss::kBinaryCrossentropy:
      return kernels::SigmoidCrossEntropy(ctx, logits, inputs.labels, dlogits);
    case Loss::kSoftmaxCrossentropy:
      return kernels::SoftmaxCrossEntropy(ctx, logits, inputs.class_labels,
                                          dlogits);
    case Loss::kSquaredError:
      break;
  }
  return kernels::MeanSquaredError(ctx, logits, inputs.labels, dlogits);
}

StatusOr<int64_t> FitNormalizer(const kernels::Context& ctx,
                                const std::vector<std::string>& files,
                                FeatureLayer* layer) {
  InputPipelineOptions options;
  options.files = files;
  options.features = layer->ParseSpecs(/*with_label=*/false);
  options.batch_size = 4096;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(options));
  kernels::NormalizerFit fit(layer->normalized_width());
  Batch batch;
  while (true) {
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(layer->ObserveForNormalizer(ctx, batch, &fit));
  }
  DTF_RETURN_IF_ERROR(layer->SetNormalizer({fit.mean(), fit.stddev()}));
  return fit.count();
}

}  // namespace dtf::runtime
