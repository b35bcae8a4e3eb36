// FeatureLayer::Create: the sources, dense inputs and sparse steps of a
// job's features (Transform and its steps: feature_layer_transform.cc).
#include "lib/runtime/model/feature_layer.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

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

void FeatureLayer::AddNumerics(const Schema& schema,
                               const FeatureSpec& features,
                               const ModelSpec& model) {
  const bool linear = model.type == ModelType::kLinear;
  for (const NumericFeature& f : features.numeric) {
    Numeric numeric;
    numeric.source =
        AddSource(schema, f.source, f.source_kind == InputKind::kVector);
    if (f.default_value) numeric.default_value = float(*f.default_value);
    DenseInput dense{f.name, f.dimension, f.normalize, -1, -1};
    if (f.normalize) {
      numeric.normalized_offset = normalized_width_;
      normalized_width_ += f.dimension;
    }
    if (model.has_deep() && f.deep) {
      dense.deep_offset = deep_width_;
      deep_width_ += f.dimension;
    }
    if (model.has_wide() && (f.wide || (linear && f.deep))) {
      dense.wide_offset = wide_width_;
      wide_width_ += f.dimension;
    }
    numerics_.push_back(numeric);
    dense_.push_back(std::move(dense));
  }
}

void FeatureLayer::AddSparse(const ModelSpec& model, const std::string& name,
                             int64_t num_ids, const CategoricalUse& use,
                             SparseStep step) {
  SparseInput input;
  input.name = name;
  input.num_ids = num_ids;
  input.embedding = model.has_deep() ? use.embedding : 0;
  input.combiner = use.combiner;
  input.wide = model.has_wide() && use.wide;
  sparse_.push_back(std::move(input));
  steps_.push_back(std::move(step));
}

Status FeatureLayer::AddColumnIds(const Schema& schema,
                                  const FeatureSpec& features,
                                  const ModelSpec& model) {
  for (const CategoricalFeature& f : features.categorical) {
    SparseStep step;
    step.kind = FeatureKind::kCategorical;
    step.source = AddSource(schema, f.source, false);
    DTF_ASSIGN_OR_RETURN(
        kernels::Vocabulary vocabulary,
        kernels::Vocabulary::Create(f.vocabulary, f.num_oov_buckets));
    step.vocabulary.emplace(std::move(vocabulary));
    AddSparse(model, f.name, f.num_ids(), f, std::move(step));
  }
  for (const HashedFeature& f : features.hashed) {
    SparseStep step;
    step.kind = FeatureKind::kHashed;
    step.source = AddSource(schema, f.source, false);
    step.buckets = f.buckets;
    AddSparse(model, f.name, f.num_ids(), f, std::move(step));
  }
  for (const BucketizedFeature& f : features.bucketized) {
    SparseStep step;
    step.kind = FeatureKind::kBucketized;
    if (f.source_kind == InputKind::kFeature) {
      for (size_t i = 0; i < features.numeric.size(); ++i) {
        if (features.numeric[i].name == f.source) step.numeric = int(i);
      }
    } else {
      step.source = AddSource(schema, f.source, false);
    }
    for (double b : f.boundaries) step.boundaries.push_back(float(b));
    AddSparse(model, f.name, f.num_ids(), f, std::move(step));
  }
  return OkStatus();
}

Status FeatureLayer::AddCrossed(const Schema& schema,
                                const FeatureSpec& features,
                                const ModelSpec& model) {
  for (const CrossedFeature& f : features.crossed) {
    SparseStep step;
    step.kind = FeatureKind::kCrossed;
    step.buckets = f.buckets;
    for (const CrossInput& in : f.columns) {
      if (in.kind == InputKind::kFeature) {
        int found = -1;
        for (size_t i = 0; i < sparse_.size(); ++i) {
          if (sparse_[i].name == in.name) found = int(i);
        }
        if (found < 0) {
          return InvalidArgumentError(StrCat("crossed feature \"", f.name,
                                             "\": unknown input \"", in.name,
                                             "\""));
        }
        step.cross_inputs.push_back(found);
      } else {
        step.cross_inputs.push_back(~AddSource(schema, in.name, false));
      }
    }
    AddSparse(model, f.name, f.num_ids(), f, std::move(step));
  }
  return OkStatus();
}

Status FeatureLayer::AddDate(const Schema& schema, const DateFeature& f,
                             const ModelSpec& model) {
  DateInput date;
  date.name = f.name;
  date.source = AddSource(schema, f.source, false);
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
  const int index = static_cast<int>(dates_.size());
  dates_.push_back(std::move(date));
  const bool wide = model.has_wide() && f.wide;
  const bool deep = model.has_deep() && f.embedding > 0;
  for (DatePart part : f.parts) {
    const std::string name = StrCat(f.name, "/", DatePartName(part));
    if (IsCalendarPart(part)) {
      SparseStep step;
      step.kind = FeatureKind::kDate;
      step.date = index;
      step.part = part;
      AddSparse(model, name, DatePartIds(part), f, std::move(step));
      continue;
    }
    if (!wide && !deep) continue;
    Numeric numeric;
    numeric.date = index;
    numeric.part = part;
    numeric.normalized_offset = normalized_width_++;
    DenseInput dense{name, 1, true, -1, -1};
    if (deep) dense.deep_offset = deep_width_++;
    if (wide) dense.wide_offset = wide_width_++;
    numerics_.push_back(numeric);
    dense_.push_back(std::move(dense));
  }
  return OkStatus();
}

Status FeatureLayer::CheckNames() const {
  for (size_t i = 0; i < sparse_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (sparse_[i].name == sparse_[j].name) {
        return InvalidArgumentError(
            StrCat("two model inputs are named \"", sparse_[i].name, "\""));
      }
    }
  }
  return OkStatus();
}

Status FeatureLayer::SetLabel(const Schema& schema) {
  if (!schema.label) {
    return InvalidArgumentError("the schema names no label column");
  }
  label_ = schema.label->column;
  const ColumnSpec* label = schema.FindColumn(label_);
  label_type_ = !schema.label->mapping.empty() || label == nullptr
                    ? FeatureType::kInt64
                    : ParseType(label->type);
  if (label_type_ == FeatureType::kBytes) {
    return InvalidArgumentError(StrCat("label column \"", label_,
                                       "\" is a string without a label map"));
  }
  return OkStatus();
}

StatusOr<FeatureLayer> FeatureLayer::Create(const Schema& schema,
                                            const FeatureSpec& features,
                                            const ModelSpec& model) {
  FeatureLayer layer;
  layer.loss_ = model.loss;
  layer.classes_ = model.classes;
  layer.AddNumerics(schema, features, model);
  DTF_RETURN_IF_ERROR(layer.AddColumnIds(schema, features, model));
  DTF_RETURN_IF_ERROR(layer.AddCrossed(schema, features, model));
  for (const DateFeature& f : features.date) {
    DTF_RETURN_IF_ERROR(layer.AddDate(schema, f, model));
  }
  for (const TextFeature& f : features.text) {
    SparseStep step;
    step.kind = FeatureKind::kText;
    step.source = layer.AddSource(schema, f.source, false);
    step.buckets = f.buckets;
    step.ngrams = f.ngrams;
    layer.AddSparse(model, f.name, f.num_ids(), f, std::move(step));
  }
  DTF_RETURN_IF_ERROR(layer.CheckNames());
  DTF_RETURN_IF_ERROR(layer.SetLabel(schema));
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

}  // namespace dtf::runtime
