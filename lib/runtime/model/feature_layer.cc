#include "lib/runtime/model/feature_layer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/text_tokens.h"

namespace dtf::runtime {
namespace {

using kernels::IdTensor;
using kernels::SparseIds;
using kernels::Tensor;

FeatureType ParseType(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return FeatureType::kInt64;
    case ValueType::kFloat:
      return FeatureType::kFloat;
    case ValueType::kString:
      break;
  }
  return FeatureType::kBytes;
}

kernels::Combiner ToKernel(Combiner combiner) {
  return combiner == Combiner::kSum ? kernels::Combiner::kSum
                                    : kernels::Combiner::kMean;
}

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

int FeatureLayer::AddSource(const Schema& schema, const std::string& name,
                            bool vector) {
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i].name == name) return static_cast<int>(i);
  }
  Source source;
  source.name = name;
  if (vector) {
    for (const VectorSpec& v : schema.vectors) {
      if (v.name == name) {
        source.type = ParseType(v.type);
        source.dimension = static_cast<int64_t>(v.columns.size());
      }
    }
  } else if (const ColumnSpec* column = schema.FindColumn(name)) {
    source.type = ParseType(column->type);
  }
  source.column = static_cast<int>(sources_.size());
  sources_.push_back(std::move(source));
  return static_cast<int>(sources_.size()) - 1;
}

StatusOr<FeatureLayer> FeatureLayer::Create(const Schema& schema,
                                            const FeatureSpec& features,
                                            const ModelSpec& model) {
  FeatureLayer layer;
  layer.loss_ = model.loss;
  layer.classes_ = model.classes;
  const bool linear = model.type == ModelType::kLinear;

  for (const NumericFeature& f : features.numeric) {
    Numeric numeric;
    numeric.source =
        layer.AddSource(schema, f.source, f.source_kind == InputKind::kVector);
    if (f.default_value) numeric.default_value = float(*f.default_value);
    DenseInput dense{f.name, f.dimension, f.normalize, -1, -1};
    if (f.normalize) {
      numeric.normalized_offset = layer.normalized_width_;
      layer.normalized_width_ += f.dimension;
    }
    if (model.has_deep() && f.deep) {
      dense.deep_offset = layer.deep_width_;
      layer.deep_width_ += f.dimension;
    }
    if (model.has_wide() && (f.wide || (linear && f.deep))) {
      dense.wide_offset = layer.wide_width_;
      layer.wide_width_ += f.dimension;
    }
    layer.numerics_.push_back(numeric);
    layer.dense_.push_back(std::move(dense));
  }

  auto add_sparse = [&](const std::string& name, int64_t num_ids,
                        const CategoricalUse& use, SparseStep step) {
    SparseInput input;
    input.name = name;
    input.num_ids = num_ids;
    input.embedding = model.has_deep() ? use.embedding : 0;
    input.combiner = ToKernel(use.combiner);
    input.wide = model.has_wide() && use.wide;
    layer.sparse_.push_back(std::move(input));
    layer.steps_.push_back(std::move(step));
  };
  for (const CategoricalFeature& f : features.categorical) {
    SparseStep step;
    step.kind = FeatureKind::kCategorical;
    step.source = layer.AddSource(schema, f.source, false);
    DTF_ASSIGN_OR_RETURN(
        kernels::Vocabulary vocabulary,
        kernels::Vocabulary::Create(f.vocabulary, f.num_oov_buckets));
    step.vocabulary.emplace(std::move(vocabulary));
    add_sparse(f.name, f.num_ids(), f, std::move(step));
  }
  for (const HashedFeature& f : features.hashed) {
    SparseStep step;
    step.kind = FeatureKind::kHashed;
    step.source = layer.AddSource(schema, f.source, false);
    step.buckets = f.buckets;
    add_sparse(f.name, f.num_ids(), f, std::move(step));
  }
  for (const BucketizedFeature& f : features.bucketized) {
    SparseStep step;
    step.kind = FeatureKind::kBucketized;
    if (f.source_kind == InputKind::kFeature) {
      for (size_t i = 0; i < features.numeric.size(); ++i) {
        if (features.numeric[i].name == f.source) step.numeric = int(i);
      }
    } else {
      step.source = layer.AddSource(schema, f.source, false);
    }
    for (double b : f.boundaries) step.boundaries.push_back(float(b));
    add_sparse(f.name, f.num_ids(), f, std::move(step));
  }
  for (const CrossedFeature& f : features.crossed) {
    SparseStep step;
    step.kind = FeatureKind::kCrossed;
    step.buckets = f.buckets;
    for (const CrossInput& in : f.columns) {
      if (in.kind == InputKind::kFeature) {
        int found = -1;
        for (size_t i = 0; i < layer.sparse_.size(); ++i) {
          if (layer.sparse_[i].name == in.name) found = int(i);
        }
        if (found < 0) {
          return InvalidArgumentError(StrCat("crossed feature \"", f.name,
                                             "\": unknown input \"", in.name,
                                             "\""));
        }
        step.cross_inputs.push_back(found);
      } else {
        step.cross_inputs.push_back(~layer.AddSource(schema, in.name, false));
      }
    }
    add_sparse(f.name, f.num_ids(), f, std::move(step));
  }
  for (const DateFeature& f : features.date) {
    DateInput date;
    date.name = f.name;
    date.source = layer.AddSource(schema, f.source, false);
    date.format = f.format;
    if (f.default_value) {
      StatusOr<DateTime> parsed = ParseDate(*f.default_value, f.format);
      if (!parsed.ok()) {
        return InvalidArgumentError(
            StrCat("date feature \"", f.name,
                   "\": default: ", Message(parsed.status())));
      }
      date.default_value = *parsed;
    }
    const int index = static_cast<int>(layer.dates_.size());
    layer.dates_.push_back(std::move(date));
    const bool wide = model.has_wide() && f.wide;
    const bool deep = model.has_deep() && f.embedding > 0;
    for (DatePart part : f.parts) {
      const std::string name = StrCat(f.name, "/", DatePartName(part));
      if (IsCalendarPart(part)) {
        SparseStep step;
        step.kind = FeatureKind::kDate;
        step.date = index;
        step.part = part;
        add_sparse(name, DatePartIds(part), f, std::move(step));
        continue;
      }
      if (!wide && !deep) continue;
      Numeric numeric;
      numeric.date = index;
      numeric.part = part;
      numeric.normalized_offset = layer.normalized_width_++;
      DenseInput dense{name, 1, true, -1, -1};
      if (deep) dense.deep_offset = layer.deep_width_++;
      if (wide) dense.wide_offset = layer.wide_width_++;
      layer.numerics_.push_back(numeric);
      layer.dense_.push_back(std::move(dense));
    }
  }
  for (const TextFeature& f : features.text) {
    SparseStep step;
    step.kind = FeatureKind::kText;
    step.source = layer.AddSource(schema, f.source, false);
    step.buckets = f.buckets;
    step.ngrams = f.ngrams;
    add_sparse(f.name, f.num_ids(), f, std::move(step));
  }
  for (size_t i = 0; i < layer.sparse_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (layer.sparse_[i].name == layer.sparse_[j].name) {
        return InvalidArgumentError(StrCat("two model inputs are named \"",
                                           layer.sparse_[i].name, "\""));
      }
    }
  }

  if (!schema.label) {
    return InvalidArgumentError("the schema names no label column");
  }
  layer.label_ = schema.label->column;
  const ColumnSpec* label = schema.FindColumn(layer.label_);
  layer.label_type_ = !schema.label->mapping.empty() || label == nullptr
                          ? FeatureType::kInt64
                          : ParseType(label->type);
  if (layer.label_type_ == FeatureType::kBytes) {
    return InvalidArgumentError(StrCat("label column \"", layer.label_,
                                       "\" is a string without a label map"));
  }
  return layer;
}

std::vector<FeatureParseSpec> FeatureLayer::ParseSpecs(bool with_label) const {
  std::vector<FeatureParseSpec> specs;
  for (const Source& source : sources_) {
    specs.push_back(VarLenFeature(source.name, source.type));
  }
  if (with_label) specs.push_back(FixedLenFeature(label_, label_type_, 1));
  return specs;
}

Status FeatureLayer::SetNormalizer(NormalizerStats stats) {
  const auto width = static_cast<size_t>(normalized_width_);
  if (stats.mean.size() != width || stats.stddev.size() != width) {
    return InvalidArgumentError(
        StrCat("normalizer statistics hold ", stats.mean.size(), " means and ",
               stats.stddev.size(), " deviations; the features need ", width));
  }
  for (float& s : stats.stddev) {
    if (!(s > 0) || !std::isfinite(s)) s = 1.0f;
  }
  normalizer_ = std::move(stats);
  return OkStatus();
}

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
    const DenseInput& dense = dense_[f];
    const int64_t dim = dense.dimension;
    raw[f].resize(static_cast<size_t>(rows * dim));
    for (int64_t r = 0; r < rows; ++r) {
      DTF_RETURN_IF_ERROR(NumericValues(batch, f, r, raw[f].data() + r * dim));
    }
    if (dense.deep_offset < 0 && dense.wide_offset < 0) continue;
    const int64_t norm = numerics_[f].normalized_offset;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < dim; ++j) {
        float v = raw[f][static_cast<size_t>(r * dim + j)];
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
  }

  // Sparse inputs, in order (crossed ones last, reading the others).
  out->ids.resize(sparse_.size());
  std::vector<SparseIds> raw_columns;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const SparseStep& step = steps_[s];
    SparseIds& ids = out->ids[s];
    if (step.kind == FeatureKind::kCrossed) {
      raw_columns.resize(step.cross_inputs.size());
      std::vector<const SparseIds*> inputs;
      for (size_t i = 0; i < step.cross_inputs.size(); ++i) {
        const int input = step.cross_inputs[i];
        if (input >= 0) {
          inputs.push_back(&out->ids[static_cast<size_t>(input)]);
          continue;
        }
        const Source& source = sources_[static_cast<size_t>(~input)];
        const Column& column =
            batch.columns[static_cast<size_t>(source.column)];
        SparseIds& col = raw_columns[i];
        CopySplits(column, rows, &col.row_splits);
        if (column.type == FeatureType::kBytes) {
          DTF_RETURN_IF_ERROR(
              kernels::Fingerprint(ctx, Strings(column), &col.ids));
        } else if (column.type == FeatureType::kInt64) {
          col.ids = IdTensor::FromValues(std::span<const int64_t>(
              column.int64s.data(), size_t(column.num_values())));
        } else {
          return InvalidArgumentError(
              StrCat("crossed feature \"", sparse_[s].name,
                     "\": float column \"", source.name, "\" cannot cross"));
        }
        inputs.push_back(&col);
      }
      DTF_RETURN_IF_ERROR(kernels::CrossIds(ctx, inputs, step.buckets, &ids));
      continue;
    }
    if (step.kind == FeatureKind::kDate) {
      ids.ids.Resize(rows);
      ids.row_splits.Resize(rows + 1);
      ids.row_splits[0] = 0;
      for (int64_t r = 0; r < rows; ++r) {
        DateTime date;
        DTF_RETURN_IF_ERROR(
            DateAt(batch, static_cast<size_t>(step.date), r, &date));
        const int64_t id = step.part == DatePart::kMonth     ? date.month - 1
                           : step.part == DatePart::kDay     ? date.day - 1
                           : step.part == DatePart::kWeekday ? date.weekday
                                                             : date.hour;
        ids.ids[r] = id;
        ids.row_splits[r + 1] = r + 1;
      }
      continue;
    }
    if (step.kind == FeatureKind::kText) {
      DTF_RETURN_IF_ERROR(TextIds(ctx, batch, step, &ids));
      continue;
    }
    if (step.kind == FeatureKind::kBucketized && step.numeric >= 0) {
      const auto& values = raw[static_cast<size_t>(step.numeric)];
      DTF_RETURN_IF_ERROR(
          kernels::Bucketize(ctx, values, step.boundaries, &ids.ids));
      ids.row_splits.Resize(rows + 1);
      for (int64_t r = 0; r <= rows; ++r) ids.row_splits[r] = r;
      continue;
    }
    const Source& source = sources_[static_cast<size_t>(step.source)];
    const Column& column = batch.columns[static_cast<size_t>(source.column)];
    CopySplits(column, rows, &ids.row_splits);
    const auto n = static_cast<size_t>(column.num_values());
    switch (step.kind) {
      case FeatureKind::kCategorical:
        if (column.type == FeatureType::kBytes) {
          DTF_RETURN_IF_ERROR(
              step.vocabulary->Lookup(ctx, Strings(column), &ids.ids));
        } else {
          DTF_RETURN_IF_ERROR(step.vocabulary->Lookup(
              ctx, std::span<const int64_t>(column.int64s.data(), n),
              &ids.ids));
        }
        DropNegativeIds(&ids);
        break;
      case FeatureKind::kHashed:
        if (column.type == FeatureType::kBytes) {
          DTF_RETURN_IF_ERROR(kernels::HashBucket(ctx, Strings(column),
                                                  step.buckets, &ids.ids));
        } else {
          DTF_RETURN_IF_ERROR(kernels::HashBucket(
              ctx, std::span<const int64_t>(column.int64s.data(), n),
              step.buckets, &ids.ids));
        }
        break;
      case FeatureKind::kBucketized: {
        std::vector<float> values(n);
        for (size_t i = 0; i < n; ++i) {
          values[i] = column.type == FeatureType::kInt64
                          ? float(column.int64s[i])
                          : column.floats[i];
        }
        DTF_RETURN_IF_ERROR(
            kernels::Bucketize(ctx, values, step.boundaries, &ids.ids));
        break;
      }
      default:
        break;
    }
  }

  if (!with_label) return OkStatus();
  const Column& label = batch.columns.back();
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

}  // namespace dtf::runtime
