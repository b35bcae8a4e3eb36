// Scoring records with an exported model (exported_model.h's
// LoadExportedModel): each batch the input pipeline reads goes through the
// feature layer and the model's forward pass; a record's logits become its
// scores (ScoreRecord: the sigmoid or softmax of its loss) and the caller
// formats them.
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

// What a record's logits say, by the model's loss.
struct RecordScore {
  // Binary crossentropy: the probability of class 1 (the sigmoid of the
  // logit); softmax crossentropy: one probability per class (the softmax of
  // the logits). Empty for squared error.
  std::vector<double> probabilities;
  // The class: 1 when the probability of class 1 is >= 0.5 (binary), the
  // first class of the highest logit (softmax); 0 for squared error.
  int64_t class_id = 0;
  // Squared error: the output itself.
  double prediction = 0;
};

// The scores of one record from its `outputs` logits under `loss`; reuses
// `score`'s storage.
void ScoreRecord(Loss loss, const float* logits, int64_t outputs,
                 RecordScore* score);

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

  // The scores of one record of a batch's logits (Run), row `r`.
  void Score(const kernels::Tensor& logits, int64_t r,
             RecordScore* score) const {
    ScoreRecord(spec().loss, logits.data() + r * outputs(), outputs(), score);
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
  // An export of a sharded run: the batch's ids made compact, and the
  // rows they read brought into the model's tables (sharded_export.h).
  Status ReadTableRows();

  Predictor(LoadedModel model, int threads)
      : model_(std::move(model)), ctx_(kernels::Context::Cpu(threads)) {}

  LoadedModel model_;
  kernels::Context ctx_;
  ModelInputs inputs_;
  kernels::Tensor logits_;
};

}  // namespace dtf::runtime
