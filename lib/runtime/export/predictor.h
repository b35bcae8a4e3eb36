// Scoring records with an exported model (exported_model.h's
// LoadExportedModel): each batch the input pipeline reads goes through the
// feature layer and the model's forward pass, and the caller formats the
// logits.
//
// Every batch is padded to a multiple of kPredictRowPadding rows (copies of
// its last row, whose scores are dropped) before the model runs. The dense
// kernels compute the rows past a batch's last full SIMD panel by another
// code path, whose rounding differs in the last bits: unpadded, a record's
// score would depend on where its batch happens to end. Padded, every record
// is scored alike in any batch, so a split input (dtf predict --shard,
// --profile) scores byte for byte as one process does.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/batch.h"
#include "lib/data/input_pipeline.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/model/feature_layer.h"

namespace dtf::runtime {

// A multiple of every panel height the dense kernels use.
inline constexpr int64_t kPredictRowPadding = 64;

// Appends copies of the batch's last row until it holds a multiple of
// `multiple` rows; rows before them are unchanged. REQUIRES: batch->rows > 0.
void PadBatchRows(Batch* batch, int64_t multiple);

// Not thread-safe: one Run at a time.
class Predictor {
 public:
  // Loads the exported model in `dir` (errors name the file); `threads`
  // compute threads, 0 for one per core.
  static StatusOr<Predictor> Load(const std::string& dir, int threads);

  const LoadedModel& model() const { return model_; }
  const ModelSpec& spec() const { return *model_.definition.model; }
  // Logits per record: 1, or the classes of a softmax model.
  int64_t outputs() const { return spec().outputs(); }

  // The model's input features, to parse (the label is not read); a caller
  // may parse more columns after them.
  std::vector<FeatureParseSpec> ParseSpecs() const {
    return model_.layer.ParseSpecs(/*with_label=*/false);
  }

  // Reads the records of `options` in order and calls `each` once per batch
  // with the batch, its record count `rows` and the logits, [rows', outputs]
  // where rows' >= rows (the padding's rows follow; the batch holds them
  // too). Stops at the first error of the input, the model or `each`, and
  // with Cancelled once `*cancel` (optional) is set.
  using BatchScores = std::function<Status(const Batch& batch, int64_t rows,
                                           const kernels::Tensor& logits)>;
  Status Run(const InputPipelineOptions& options,
             const std::atomic<bool>* cancel, const BatchScores& each);

 private:
  Predictor(LoadedModel model, int threads)
      : model_(std::move(model)), ctx_(kernels::Context::Cpu(threads)) {}

  LoadedModel model_;
  kernels::Context ctx_;
  ModelInputs inputs_;
  kernels::Tensor logits_;
};

}  // namespace dtf::runtime
