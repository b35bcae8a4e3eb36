#include "lib/data/job_toml.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"

namespace dtf {
namespace {

using toml_util::Quote;

std::string_view Bool(bool b) { return b ? "true" : "false"; }

// `key = value\n`.
template <typename T>
void AppendKey(std::string* out, std::string_view key, const T& value) {
  StrAppend(out, key, " = ", value, "\n");
}

// `key = [a, b, ...]\n` with each element as `format` writes it.
template <typename List, typename Format>
void AppendList(std::string* out, std::string_view key, const List& list,
                Format format) {
  StrAppend(out, key, " = [");
  for (size_t i = 0; i < list.size(); ++i) {
    StrAppend(out, i == 0 ? "" : ", ", format(list[i]));
  }
  StrAppend(out, "]\n");
}

// The keys every categorical kind takes. combiner only with an embedding:
// the parser rejects it otherwise.
void AppendUse(std::string* out, const CategoricalUse& use) {
  AppendKey(out, "embedding", use.embedding);
  if (use.embedding > 0) {
    AppendKey(out, "combiner", Quote(CombinerName(use.combiner)));
  }
  AppendKey(out, "wide", Bool(use.wide));
}

void AppendHeader(std::string* out, FeatureKind kind, const std::string& name) {
  StrAppend(out, "\n[[features.", FeatureKindName(kind), "]]\n");
  AppendKey(out, "name", Quote(name));
}

void AppendNumeric(std::string* out, const NumericFeature& f) {
  AppendHeader(out, FeatureKind::kNumeric, f.name);
  AppendKey(out, "source", Quote(f.source));
  AppendKey(out, "normalize", Bool(f.normalize));
  if (f.default_value)
    AppendKey(out, "default", toml_util::Float(*f.default_value));
  AppendKey(out, "deep", Bool(f.deep));
  AppendKey(out, "wide", Bool(f.wide));
}

void AppendCategorical(std::string* out, const CategoricalFeature& f) {
  AppendHeader(out, FeatureKind::kCategorical, f.name);
  AppendKey(out, "source", Quote(f.source));
  // An int source's entries are canonical int64 texts: written as TOML
  // integers, as a person would write them.
  const bool ints = f.source_type == ValueType::kInt;
  AppendList(out, "vocabulary", f.vocabulary, [&](const std::string& entry) {
    return ints ? entry : Quote(entry);
  });
  AppendKey(out, "num_oov_buckets", f.num_oov_buckets);
  AppendUse(out, f);
}

void AppendHashed(std::string* out, const HashedFeature& f) {
  AppendHeader(out, FeatureKind::kHashed, f.name);
  AppendKey(out, "source", Quote(f.source));
  AppendKey(out, "buckets", f.buckets);
  AppendUse(out, f);
}

void AppendBucketized(std::string* out, const BucketizedFeature& f) {
  AppendHeader(out, FeatureKind::kBucketized, f.name);
  AppendKey(out, "source", Quote(f.source));
  AppendList(out, "boundaries", f.boundaries, toml_util::Float);
  AppendUse(out, f);
}

void AppendCrossed(std::string* out, const CrossedFeature& f) {
  AppendHeader(out, FeatureKind::kCrossed, f.name);
  AppendList(out, "columns", f.columns,
             [](const CrossInput& input) { return Quote(input.name); });
  AppendKey(out, "buckets", f.buckets);
  AppendUse(out, f);
}

void AppendDate(std::string* out, const DateFeature& f) {
  AppendHeader(out, FeatureKind::kDate, f.name);
  AppendKey(out, "source", Quote(f.source));
  AppendKey(out, "format", Quote(DateFormatName(f.format)));
  AppendList(out, "parts", f.parts,
             [](DatePart part) { return Quote(DatePartName(part)); });
  if (f.default_value) AppendKey(out, "default", Quote(*f.default_value));
  AppendKey(out, "embedding", f.embedding);
  AppendKey(out, "wide", Bool(f.wide));
}

void AppendText(std::string* out, const TextFeature& f) {
  AppendHeader(out, FeatureKind::kText, f.name);
  AppendKey(out, "source", Quote(f.source));
  AppendKey(out, "buckets", f.buckets);
  AppendKey(out, "ngrams", f.ngrams);
  AppendUse(out, f);
}

}  // namespace

std::string FeatureSpecToToml(const FeatureSpec& features) {
  std::string out = "[features]\n";
  for (const NumericFeature& f : features.numeric) AppendNumeric(&out, f);
  for (const CategoricalFeature& f : features.categorical) {
    AppendCategorical(&out, f);
  }
  for (const HashedFeature& f : features.hashed) AppendHashed(&out, f);
  for (const BucketizedFeature& f : features.bucketized) {
    AppendBucketized(&out, f);
  }
  for (const CrossedFeature& f : features.crossed) AppendCrossed(&out, f);
  for (const DateFeature& f : features.date) AppendDate(&out, f);
  for (const TextFeature& f : features.text) AppendText(&out, f);
  return out;
}

std::string ModelSpecToToml(const ModelSpec& model) {
  std::string out = "[model]\n";
  AppendKey(&out, "type", Quote(ModelTypeName(model.type)));
  if (model.has_deep()) {
    AppendList(&out, "hidden", model.hidden,
               [](int64_t size) { return StrCat(size); });
    AppendKey(&out, "activation", Quote(ActivationName(model.activation)));
    AppendKey(&out, "batch_norm", Bool(model.batch_norm));
    AppendKey(&out, "dropout", toml_util::Float(model.dropout));
  }
  AppendKey(&out, "loss", Quote(LossName(model.loss)));
  if (model.loss == Loss::kSoftmaxCrossentropy) {
    AppendKey(&out, "classes", model.classes);
  }
  return out;
}

std::string ModelDefinitionToToml(const JobFile& job) {
  std::string out = SchemaToToml(job.schema);
  StrAppend(&out, "\n", FeatureSpecToToml(job.features), "\n",
            ModelSpecToToml(*job.model));
  return out;
}

}  // namespace dtf
