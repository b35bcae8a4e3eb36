#include "lib/runtime/export/predictor.h"

#include <memory>
#include <utility>

namespace dtf::runtime {

void PadBatchRows(Batch* batch, int64_t multiple) {
  const int64_t rows = batch->rows;
  const int64_t target = (rows + multiple - 1) / multiple * multiple;
  const int64_t last = rows - 1;
  for (Column& c : batch->columns) {
    const int64_t begin = c.row_begin(last);
    const int64_t size = c.row_size(last);
    const bool splits = !c.row_splits.empty();
    if (c.type == FeatureType::kBytes) {
      const std::string values =
          c.bytes.substr(size_t(c.bytes_offsets[size_t(begin)]),
                         size_t(c.bytes_offsets[size_t(begin + size)] -
                                c.bytes_offsets[size_t(begin)]));
      std::vector<int64_t> lengths;
      for (int64_t i = begin; i < begin + size; ++i) {
        lengths.push_back(c.bytes_offsets[size_t(i + 1)] -
                          c.bytes_offsets[size_t(i)]);
      }
      for (int64_t r = rows; r < target; ++r) {
        c.bytes += values;
        for (int64_t n : lengths) {
          c.bytes_offsets.push_back(c.bytes_offsets.back() + n);
        }
      }
    } else if (c.type == FeatureType::kInt64) {
      const std::vector<int64_t> values(c.int64s.begin() + begin,
                                        c.int64s.begin() + begin + size);
      for (int64_t r = rows; r < target; ++r) {
        c.int64s.insert(c.int64s.end(), values.begin(), values.end());
      }
    } else {
      const std::vector<float> values(c.floats.begin() + begin,
                                      c.floats.begin() + begin + size);
      for (int64_t r = rows; r < target; ++r) {
        c.floats.insert(c.floats.end(), values.begin(), values.end());
      }
    }
    if (splits) {
      for (int64_t r = rows; r < target; ++r) {
        c.row_splits.push_back(c.row_splits.back() + size);
      }
    }
  }
  batch->rows = target;
}

StatusOr<Predictor> Predictor::Load(const std::string& dir, int threads) {
  DTF_ASSIGN_OR_RETURN(LoadedModel model, LoadExportedModel(dir));
  return Predictor(std::move(model), threads);
}

Status Predictor::Run(const InputPipelineOptions& options,
                      const std::atomic<bool>* cancel,
                      const BatchScores& each) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<InputPipeline> pipeline,
                       InputPipeline::Create(options));
  Batch batch;
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      return CancelledError("interrupted");
    }
    DTF_ASSIGN_OR_RETURN(const bool more, pipeline->Next(&batch));
    if (!more) return OkStatus();
    const int64_t rows = batch.rows;
    PadBatchRows(&batch, kPredictRowPadding);
    DTF_RETURN_IF_ERROR(model_.layer.Transform(ctx_, batch, false, &inputs_));
    DTF_RETURN_IF_ERROR(model_.model->Forward(ctx_, inputs_, false, &logits_));
    DTF_RETURN_IF_ERROR(each(batch, rows, logits_));
  }
}

}  // namespace dtf::runtime
