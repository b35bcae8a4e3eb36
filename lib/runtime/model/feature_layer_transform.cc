// FeatureLayer::Transform and ObserveForNormalizer: a parsed batch's values
// as the model's dense inputs, sparse ids and labels.
#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/text_tokens.h"
#include "lib/runtime/model/feature_layer.h"

namespace dtf::runtime {
namespace {

using kernels::IdTensor;
using kernels::SparseIds;
using kernels::Tensor;

// The row splits of `column` for `rows` rows.
void CopySplits(const Column& column, int64_t rows, IdTensor* splits) {
  splits->Resize(rows + 1);
  std::copy_n(column.row_splits.data(), rows + 1, splits->data());
}

// Drops negative ids (values a vocabulary does not know), fixing the splits.
void DropNegativeIds(SparseIds* ids) {
  const int64_t rows = ids->batch_size();
  int64_t* id = ids->ids.data();
  int64_t* splits = ids->row_splits.data();
  int64_t out = 0;
  int64_t begin = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t end = splits[r + 1];
    for (int64_t i = begin; i < end; ++i) {
      if (id[i] >= 0) id[out++] = id[i];
    }
    begin = end;
    splits[r + 1] = out;
  }
  ids->ids.Resize(out);
}

kernels::PackedStrings Strings(const Column& column) {
  return kernels::PackedStrings{column.bytes, column.bytes_offsets};
}

}  // namespace

Status FeatureLayer::DateAt(const Batch& batch, size_t date, int64_t row,
                            DateTime* out) const {
  const DateInput& d = dates_[date];
  const Source& source = sources_[static_cast<size_t>(d.source)];
  const Column& column = batch.columns[static_cast<size_t>(source.column)];
  const int64_t size = column.row_size(row);
  if (size > 1) {
    return InvalidArgumentError(
        StrCat("date feature \"", d.name, "\": a record holds ", size,
               " values of \"", source.name, "\", expected 1"));
  }
  std::string_view text;
  if (size == 1) {
    const auto i = static_cast<size_t>(column.row_begin(row));
    const auto begin = static_cast<size_t>(column.bytes_offsets[i]);
    const auto end = static_cast<size_t>(column.bytes_offsets[i + 1]);
    text = std::string_view(column.bytes).substr(begin, end - begin);
  }
  // An empty string is a missing date: a str column's default is often "".
  if (text.empty()) {
    if (!d.default_value) {
      return InvalidArgumentError(StrCat(
          "date feature \"", d.name, "\": a record has no \"", source.name,
          "\" (or an empty one) and the feature sets no default"));
    }
    *out = *d.default_value;
    return OkStatus();
  }
  StatusOr<DateTime> parsed = ParseDate(text, d.format);
  if (!parsed.ok()) {
    return InvalidArgumentError(StrCat("date feature \"", d.name,
                                       "\": column \"", source.name,
                                       "\": ", Message(parsed.status())));
  }
  *out = *parsed;
  return OkStatus();
}

Status FeatureLayer::TextIds(const kernels::Context& ctx, const Batch& batch,
                             const SparseStep& step, SparseIds* ids) const {
  const Source& source = sources_[static_cast<size_t>(step.source)];
  const Column& column = batch.columns[static_cast<size_t>(source.column)];
  const kernels::PackedStrings strings = Strings(column);
  std::vector<std::string> terms;
  ids->row_splits.Resize(batch.rows + 1);
  ids->row_splits[0] = 0;
  for (int64_t r = 0; r < batch.rows; ++r) {
    const int64_t begin = column.row_begin(r);
    for (int64_t i = begin; i < begin + column.row_size(r); ++i) {
      TextTerms(strings[i], step.ngrams, &terms);
    }
    ids->row_splits[r + 1] = static_cast<int64_t>(terms.size());
  }
  return kernels::HashBucket(ctx, std::span<const std::string>(terms),
                             step.buckets, &ids->ids);
}

Status FeatureLayer::NumericValues(const Batch& batch, size_t numeric,
                                   int64_t row, float* out) const {
  const Numeric& n = numerics_[numeric];
  if (n.date >= 0) {
    DateTime date;
    DTF_RETURN_IF_ERROR(DateAt(batch, static_cast<size_t>(n.date), row, &date));
    *out =
        n.part == DatePart::kYear ? float(date.year) : float(date.epoch_days);
    return OkStatus();
  }
  const Source& source = sources_[static_cast<size_t>(n.source)];
  const Column& column = batch.columns[static_cast<size_t>(source.column)];
  const int64_t size = column.row_size(row);
  if (size == 0) {
    if (!n.default_value) {
      return InvalidArgumentError(StrCat(
          "numeric feature \"", dense_[numeric].name, "\": a record has no \"",
          source.name, "\" and the feature sets no default"));
    }
    std::fill_n(out, source.dimension, *n.default_value);
    return OkStatus();
  }
  if (size != source.dimension) {
    return InvalidArgumentError(StrCat(
        "numeric feature \"", dense_[numeric].name, "\": a record holds ", size,
        " values of \"", source.name, "\", expected ", source.dimension));
  }
  const int64_t begin = column.row_begin(row);
  if (column.type == FeatureType::kInt64) {
    for (int64_t i = 0; i < size; ++i) out[i] = float(column.int64s[begin + i]);
  } else {
    std::copy_n(column.floats.data() + begin, size, out);
  }
  return OkStatus();
}

Status FeatureLayer::ObserveForNormalizer(const kernels::Context& ctx,
                                          const Batch& batch,
                                          kernels::NormalizerFit* fit) const {
  if (!needs_normalizer() || batch.rows == 0) return OkStatus();
  Tensor values = Tensor::Empty({batch.rows, normalized_width_});
  std::vector<float> raw;
  for (size_t f = 0; f < numerics_.size(); ++f) {
    const Numeric& n = numerics_[f];
    if (n.normalized_offset < 0) continue;
    raw.resize(static_cast<size_t>(dense_[f].dimension));
    for (int64_t r = 0; r < batch.rows; ++r) {
      DTF_RETURN_IF_ERROR(NumericValues(batch, f, r, raw.data()));
      std::copy(raw.begin(), raw.end(),
                values.data() + r * normalized_width_ + n.normalized_offset);
    }
  }
  return fit->Add(ctx, values);
}

Status FeatureLayer::DenseValues(const Batch& batch, size_t numeric,
                                 std::vector<float>* raw,
                                 ModelInputs* out) const {
  const int64_t rows = batch.rows;
  const DenseInput& dense = dense_[numeric];
  const int64_t dim = dense.dimension;
  raw->resize(static_cast<size_t>(rows * dim));
  for (int64_t r = 0; r < rows; ++r) {
    DTF_RETURN_IF_ERROR(
        NumericValues(batch, numeric, r, raw->data() + r * dim));
  }
  if (dense.deep_offset < 0 && dense.wide_offset < 0) return OkStatus();
  const int64_t norm = numerics_[numeric].normalized_offset;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < dim; ++j) {
      float v = (*raw)[static_cast<size_t>(r * dim + j)];
      if (norm >= 0) {
        const auto k = static_cast<size_t>(norm + j);
        v = (v - normalizer_.mean[k]) / normalizer_.stddev[k];
      }
      if (dense.deep_offset >= 0) {
        out->deep_dense[r * deep_width_ + dense.deep_offset + j] = v;
      }
      if (dense.wide_offset >= 0) {
        out->wide_dense[r * wide_width_ + dense.wide_offset + j] = v;
      }
    }
  }
  return OkStatus();
}

Status FeatureLayer::CrossedIds(const kernels::Context& ctx, const Batch& batch,
                                size_t sparse, ModelInputs* out) const {
  const SparseStep& step = steps_[sparse];
  std::vector<SparseIds> raw_columns(step.cross_inputs.size());
  std::vector<const SparseIds*> inputs;
  for (size_t i = 0; i < step.cross_inputs.size(); ++i) {
    const int input = step.cross_inputs[i];
    if (input >= 0) {
      inputs.push_back(&out->ids[static_cast<size_t>(input)]);
      continue;
    }
    const Source& source = sources_[static_cast<size_t>(~input)];
    const Column& column = batch.columns[static_cast<size_t>(source.column)];
    SparseIds& col = raw_columns[i];
    CopySplits(column, batch.rows, &col.row_splits);
    if (column.type == FeatureType::kBytes) {
      DTF_RETURN_IF_ERROR(kernels::Fingerprint(ctx, Strings(column), &col.ids));
    } else if (column.type == FeatureType::kInt64) {
      col.ids = IdTensor::FromValues(std::span<const int64_t>(
          column.int64s.data(), size_t(column.num_values())));
    } else {
      return InvalidArgumentError(
          StrCat("crossed feature \"", sparse_[sparse].name,
                 "\": float column \"", source.name, "\" cannot cross"));
    }
    inputs.push_back(&col);
  }
  return kernels::CrossIds(ctx, inputs, step.buckets, &out->ids[sparse]);
}

Status FeatureLayer::DateIds(const Batch& batch, const SparseStep& step,
                             SparseIds* ids) const {
  const int64_t rows = batch.rows;
  ids->ids.Resize(rows);
  ids->row_splits.Resize(rows + 1);
  ids->row_splits[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    DateTime date;
    DTF_RETURN_IF_ERROR(
        DateAt(batch, static_cast<size_t>(step.date), r, &date));
    const int64_t id = step.part == DatePart::kMonth     ? date.month - 1
                       : step.part == DatePart::kDay     ? date.day - 1
                       : step.part == DatePart::kWeekday ? date.weekday
                                                         : date.hour;
    ids->ids[r] = id;
    ids->row_splits[r + 1] = r + 1;
  }
  return OkStatus();
}

Status FeatureLayer::ColumnIds(const kernels::Context& ctx, const Batch& batch,
                               const SparseStep& step, SparseIds* ids) const {
  const Source& source = sources_[static_cast<size_t>(step.source)];
  const Column& column = batch.columns[static_cast<size_t>(source.column)];
  CopySplits(column, batch.rows, &ids->row_splits);
  const auto n = static_cast<size_t>(column.num_values());
  switch (step.kind) {
    case FeatureKind::kCategorical:
      if (column.type == FeatureType::kBytes) {
        DTF_RETURN_IF_ERROR(
            step.vocabulary->Lookup(ctx, Strings(column), &ids->ids));
      } else {
        DTF_RETURN_IF_ERROR(step.vocabulary->Lookup(
            ctx, std::span<const int64_t>(column.int64s.data(), n), &ids->ids));
      }
      DropNegativeIds(ids);
      break;
    case FeatureKind::kHashed:
      if (column.type == FeatureType::kBytes) {
        DTF_RETURN_IF_ERROR(
            kernels::HashBucket(ctx, Strings(column), step.buckets, &ids->ids));
      } else {
        DTF_RETURN_IF_ERROR(kernels::HashBucket(
            ctx, std::span<const int64_t>(column.int64s.data(), n),
            step.buckets, &ids->ids));
      }
      break;
    case FeatureKind::kBucketized: {
      std::vector<float> values(n);
      for (size_t i = 0; i < n; ++i) {
        values[i] = column.type == FeatureType::kInt64 ? float(column.int64s[i])
                                                       : column.floats[i];
      }
      DTF_RETURN_IF_ERROR(
          kernels::Bucketize(ctx, values, step.boundaries, &ids->ids));
      break;
    }
    default:
      break;
  }
  return OkStatus();
}

Status FeatureLayer::StepIds(const kernels::Context& ctx, const Batch& batch,
                             size_t sparse,
                             const std::vector<std::vector<float>>& raw,
                             ModelInputs* out) const {
  const SparseStep& step = steps_[sparse];
  SparseIds& ids = out->ids[sparse];
  if (step.kind == FeatureKind::kCrossed) {
    return CrossedIds(ctx, batch, sparse, out);
  }
  if (step.kind == FeatureKind::kDate) return DateIds(batch, step, &ids);
  if (step.kind == FeatureKind::kText) return TextIds(ctx, batch, step, &ids);
  if (step.kind == FeatureKind::kBucketized && step.numeric >= 0) {
    const auto& values = raw[static_cast<size_t>(step.numeric)];
    DTF_RETURN_IF_ERROR(
        kernels::Bucketize(ctx, values, step.boundaries, &ids.ids));
    ids.row_splits.Resize(batch.rows + 1);
    for (int64_t r = 0; r <= batch.rows; ++r) ids.row_splits[r] = r;
    return OkStatus();
  }
  return ColumnIds(ctx, batch, step, &ids);
}

Status FeatureLayer::Labels(const Batch& batch, ModelInputs* out) const {
  const int64_t rows = batch.rows;
  // By name: a batch may hold columns beside the model's (a traced one).
  const Column* found = batch.Find(label_);
  if (found == nullptr) {
    return InvalidArgumentError(
        StrCat("the batch has no label column \"", label_, "\""));
  }
  const Column& label = *found;
  if (loss_ == Loss::kSoftmaxCrossentropy) {
    out->class_labels.Resize(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t v = label.int64s[static_cast<size_t>(r)];
      if (v < 0 || v >= classes_) {
        return InvalidArgumentError(StrCat("label \"", label_, "\": ", v,
                                           " is not a class in [0, ", classes_,
                                           ")"));
      }
      out->class_labels[r] = v;
    }
    return OkStatus();
  }
  out->labels.Resize({rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    const auto i = static_cast<size_t>(r);
    const float v = label.type == FeatureType::kInt64 ? float(label.int64s[i])
                                                      : label.floats[i];
    if (loss_ == Loss::kBinaryCrossentropy && !(v >= 0.0f && v <= 1.0f)) {
      return InvalidArgumentError(StrCat("label \"", label_, "\": ", v,
                                         " is not in [0, 1] as binary "
                                         "cross-entropy needs"));
    }
    out->labels[r] = v;
  }
  return OkStatus();
}

Status FeatureLayer::Transform(const kernels::Context& ctx, const Batch& batch,
                               bool with_label, ModelInputs* out) const {
  const int64_t rows = batch.rows;
  out->rows = rows;
  out->deep_dense.Resize({rows, deep_width_});
  out->wide_dense.Resize({rows, wide_width_});
  if (needs_normalizer() &&
      normalizer_.mean.size() != static_cast<size_t>(normalized_width_)) {
    return FailedPreconditionError(
        "the feature layer's normalizer statistics are not set");
  }
  // Numeric features: raw values, kept for bucketized features, then
  // normalized into the dense inputs.
  std::vector<std::vector<float>> raw(numerics_.size());
  for (size_t f = 0; f < numerics_.size(); ++f) {
    DTF_RETURN_IF_ERROR(DenseValues(batch, f, &raw[f], out));
  }
  // Sparse inputs, in order (crossed ones last, reading the others).
  out->ids.resize(sparse_.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    DTF_RETURN_IF_ERROR(StepIds(ctx, batch, s, raw, out));
  }
  if (!with_label) return OkStatus();
  return Labels(batch, out);
}

}  // namespace dtf::runtime
