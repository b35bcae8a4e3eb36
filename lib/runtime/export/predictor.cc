#include "lib/runtime/export/predictor.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "lib/runtime/export/sharded_export.h"

namespace dtf::runtime {

void ScoreRecord(Loss loss, const float* z, int64_t outputs,
                 RecordScore* score) {
  score->probabilities.clear();
  score->class_id = 0;
  score->prediction = 0;
  if (loss == Loss::kBinaryCrossentropy) {
    const double p = 1.0 / (1.0 + std::exp(-double(z[0])));
    score->probabilities.push_back(p);
    score->class_id = p >= 0.5 ? 1 : 0;
  } else if (loss == Loss::kSoftmaxCrossentropy) {
    double max = z[0];
    int64_t best = 0;
    for (int64_t k = 1; k < outputs; ++k) {
      if (z[k] > max) max = z[k], best = k;
    }
    std::vector<double>& p = score->probabilities;
    p.resize(static_cast<size_t>(outputs));
    double sum = 0;
    for (int64_t k = 0; k < outputs; ++k) {
      sum += p[size_t(k)] = std::exp(double(z[k]) - max);
    }
    for (double& v : p) v /= sum;
    score->class_id = best;
  } else {
    score->prediction = z[0];
  }
}

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

Status Predictor::ReadTableRows() {
  // Each sparse input's ids become places in its sorted unique ids, whose
  // rows the tables then hold.
  std::vector<std::vector<int64_t>> unique(inputs_.ids.size());
  for (size_t s = 0; s < inputs_.ids.size(); ++s) {
    kernels::IdTensor& ids = inputs_.ids[s].ids;
    std::vector<int64_t>& u = unique[s];
    u.assign(ids.data(), ids.data() + ids.size());
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (int64_t k = 0; k < ids.size(); ++k) {
      ids[k] = std::lower_bound(u.begin(), u.end(), ids[k]) - u.begin();
    }
  }
  Model& model = *model_.model;
  for (size_t v = 0; v < model.variables().size(); ++v) {
    Variable& var = model.variables()[v];
    const int s = model.SparseInputOf(v);
    if (!var.sparse || s < 0) continue;
    const std::vector<int64_t>& shape = model.specs()[v].shape;
    std::vector<int64_t> rows_shape = shape;
    rows_shape[0] = int64_t(unique[size_t(s)].size());
    var.value = kernels::Tensor::Empty(rows_shape);
    DTF_RETURN_IF_ERROR(
        model_.rows->Read(var.name, shape[0], unique[size_t(s)], &var.value));
  }
  return OkStatus();
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
    if (model_.rows != nullptr) DTF_RETURN_IF_ERROR(ReadTableRows());
    DTF_RETURN_IF_ERROR(model_.model->Forward(ctx_, inputs_, false, &logits_));
    DTF_RETURN_IF_ERROR(each(batch, rows, logits_));
  }
}

}  // namespace dtf::runtime
