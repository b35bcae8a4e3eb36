// The job file's [features] table (docs/job-file.md): TensorFlow feature
// columns over the [schema] columns, as plain configuration. The trainer turns
// them into tensors; nothing here computes.
//
// Every feature has a name unique across all kinds. A feature either feeds the
// wide (linear) part of a model, the deep part, or both, or is the input of a
// bucketized or crossed feature; one that does none of these is an error.
// Categorical kinds (categorical, hashed, bucketized, crossed) produce ids in
// [0, num_ids()); they enter the wide part one-hot (TF's sparse linear
// weights) and the deep part through an embedding table. A date feature
// derives several inputs from one column (DateFeature); a text feature is a
// bag of hashed words (TextFeature).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/combiner.h"
#include "lib/base/status.h"
#include "lib/data/date_parse.h"
#include "lib/data/schema.h"

namespace dtf {

enum class FeatureKind {
  kNumeric,
  kCategorical,
  kHashed,
  kBucketized,
  kCrossed,
  kDate,
  kText
};
inline constexpr int kNumFeatureKinds = 7;
// "numeric", "categorical", "hashed", "bucketized", "crossed", "date",
// "text": the key under [features].
inline std::string_view FeatureKindName(FeatureKind kind) {
  static constexpr std::string_view kNames[] = {
      "numeric", "categorical", "hashed", "bucketized",
      "crossed", "date",        "text"};
  return kNames[static_cast<int>(kind)];
}

// What a source name refers to.
enum class InputKind {
  kColumn,   // a [schema] column
  kVector,   // a [schema] vector (numeric features only)
  kFeature,  // another feature (bucketized and crossed inputs)
};

// How a categorical-kind feature feeds the model.
struct CategoricalUse {
  // [...] embedding: the dimension of its embedding in the deep part; 0: not
  // in the deep part. Default: 0.
  int64_t embedding = 0;
  // [...] combiner: how the embedding reduces several ids of one row (a
  // row has several only from a multi-valued input; scalar columns give
  // one), "sum" or "mean" (a job file gives no "sqrtn"). Only with an
  // embedding. Default: mean.
  Combiner combiner = Combiner::kMean;
  // [...] wide: one-hot into the wide part. Default: embedding == 0.
  bool wide = true;

  bool deep() const { return embedding > 0; }
};

// [[features.numeric]]: tf.feature_column.numeric_column.
struct NumericFeature {
  std::string name;
  // source: a column or vector of type int or float. Default: `name`.
  std::string source;
  InputKind source_kind = InputKind::kColumn;  // kColumn or kVector
  ValueType source_type = ValueType::kFloat;   // kInt or kFloat
  // Values per row: 1 for a column, the member count for a vector.
  int64_t dimension = 1;
  // normalize: z-score with the training data's mean and standard deviation
  // (the trainer computes them). Default: false.
  bool normalize = false;
  // default: the value used when a record lacks the feature; without one a
  // record lacking it is an error at training time.
  std::optional<double> default_value;
  // deep: feeds the deep part. Default: true.
  bool deep = true;
  // wide: feeds the wide part as a real value. Default: false.
  bool wide = false;
};

// [[features.categorical]]: categorical_column_with_vocabulary_list (or
// _file). Id i is vocabulary[i]; a value not in the vocabulary gets
// vocabulary.size() + hash(value) % num_oov_buckets, or no id when
// num_oov_buckets is 0 (TF's default_value = -1).
struct CategoricalFeature : CategoricalUse {
  std::string name;
  // source: a str or int column. Default: `name`.
  std::string source;
  ValueType source_type = ValueType::kString;  // kString or kInt
  // vocabulary, or the lines of vocabulary_file: distinct, non-empty list.
  // For an int source each entry is an int64's canonical decimal text ("-3",
  // not "-03" or "+3").
  std::vector<std::string> vocabulary;
  // vocabulary_file, resolved against the job file's directory; empty when
  // the vocabulary is listed inline. Read when the job file is loaded.
  std::string vocabulary_file;
  // num_oov_buckets (>= 0). Default: 0.
  int64_t num_oov_buckets = 0;

  int64_t num_ids() const {
    return static_cast<int64_t>(vocabulary.size()) + num_oov_buckets;
  }
};

// [[features.hashed]]: categorical_column_with_hash_bucket. Id =
// hash(value) % buckets; an int value is hashed as its decimal text, as TF
// does.
struct HashedFeature : CategoricalUse {
  std::string name;
  // source: a str or int column. Default: `name`.
  std::string source;
  ValueType source_type = ValueType::kString;  // kString or kInt
  // buckets (>= 1). Required.
  int64_t buckets = 0;

  int64_t num_ids() const { return buckets; }
};

// [[features.bucketized]]: bucketized_column. Id i means boundaries[i-1] <=
// value < boundaries[i] (id 0 below the first boundary, id
// boundaries.size() from the last one up).
struct BucketizedFeature : CategoricalUse {
  std::string name;
  // source: a numeric feature of dimension 1, or else an int or float column;
  // a numeric feature of that name wins over a column. Default: `name`. A
  // numeric feature's value is bucketized after its default applies but
  // before normalize (unlike TF's normalizer_fn), so boundaries are always in
  // the data's units.
  std::string source;
  InputKind source_kind = InputKind::kColumn;  // kColumn or kFeature
  // boundaries: strictly increasing finite numbers, at least one. Required.
  std::vector<double> boundaries;

  int64_t num_ids() const {
    return static_cast<int64_t>(boundaries.size()) + 1;
  }
};

// One input of a crossed feature.
struct CrossInput {
  std::string name;
  // kFeature: a categorical, hashed or bucketized feature's ids. kColumn: a
  // str or int column's raw value, entering the cross as TF's sparse cross
  // takes it: a string by its Fingerprint64, an int by its value.
  InputKind kind = InputKind::kFeature;
};

// [[features.crossed]]: crossed_column. Id = hash of the inputs' values
// (every combination, for multi-valued inputs) % buckets.
struct CrossedFeature : CategoricalUse {
  std::string name;
  // columns: at least two distinct names; a categorical, hashed or
  // bucketized feature of the name wins over a column.
  std::vector<CrossInput> columns;
  // buckets (>= 1): TF's hash_bucket_size. Required.
  int64_t buckets = 0;

  int64_t num_ids() const { return buckets; }
};

// What a date feature derives from its date. Calendar parts are
// categorical, with ids month - 1 (12 ids), day - 1 (31), weekday (7,
// Monday first) and hour (24); year and epoch_days (days since 1970-01-01
// UTC, time of day included) are real values, always z-scored with the
// training data's statistics as numeric features with normalize = true.
enum class DatePart { kYear, kMonth, kDay, kWeekday, kHour, kEpochDays };
inline constexpr int kNumDateParts = 6;
// "year", "month", "day", "weekday", "hour", "epoch_days".
inline std::string_view DatePartName(DatePart part) {
  static constexpr std::string_view kNames[] = {
      "year", "month", "day", "weekday", "hour", "epoch_days"};
  return kNames[static_cast<int>(part)];
}
inline bool IsCalendarPart(DatePart part) {
  return part != DatePart::kYear && part != DatePart::kEpochDays;
}
// The ids of a calendar part; 0 for year and epoch_days.
inline int64_t DatePartIds(DatePart part) {
  static constexpr int64_t kIds[] = {0, 12, 31, 7, 24, 0};
  return kIds[static_cast<int>(part)];
}

// [[features.date]]: a date or timestamp in a str column (lib/data/
// date_parse.h), split into parts. Each calendar part is a categorical input
// named "<name>/<part>" (one-hot into the wide part when `wide`, an
// embedding of `embedding` dimensions in the deep part when > 0); year and
// epoch_days are normalized real values, in the wide part's dense inputs
// when `wide` and the deep part's when embedding > 0. TensorFlow has no date
// column; this is what one builds there from the same parts.
struct DateFeature : CategoricalUse {
  std::string name;
  // source: a str column. Default: `name`.
  std::string source;
  // format: "auto" (default), "iso8601", "ymd", "mdy", "dmy", "compact".
  DateFormat format = DateFormat::kAuto;
  // parts: a non-empty list without repeats, kept in DatePart order.
  // Default: all six.
  std::vector<DatePart> parts = {DatePart::kYear, DatePart::kMonth,
                                 DatePart::kDay,  DatePart::kWeekday,
                                 DatePart::kHour, DatePart::kEpochDays};
  // default: a date (in `format`) used when a record lacks the column or
  // holds an empty string; without one such a record is an error at
  // training time, as is a value that is not a date.
  std::optional<std::string> default_value;
};

// [[features.text]]: free text in a str column as a bag of hashed terms:
// lower-cased tokens and, with ngrams = 2, pairs of neighbouring tokens
// (lib/data/text_tokens.h), each term's id Fingerprint64(term) % buckets as
// the hashed kind (tf.strings.to_hash_bucket_fast). In the wide part each
// term adds its weight once per occurrence (term-frequency weighting, TF's
// sum combiner); in the deep part the embedding's combiner (default mean)
// reduces the row's terms. A missing or empty cell has no terms.
struct TextFeature : CategoricalUse {
  std::string name;
  // source: a str column. Default: `name`.
  std::string source;
  // buckets (>= 1). Required.
  int64_t buckets = 0;
  // ngrams: 1 (words) or 2 (words and bigrams). Default: 2.
  int ngrams = 2;

  int64_t num_ids() const { return buckets; }
};

struct FeatureSpec {
  // Each list in file order.
  std::vector<NumericFeature> numeric;
  std::vector<CategoricalFeature> categorical;
  std::vector<HashedFeature> hashed;
  std::vector<BucketizedFeature> bucketized;
  std::vector<CrossedFeature> crossed;
  std::vector<DateFeature> date;
  std::vector<TextFeature> text;

  struct Ref {
    FeatureKind kind;
    size_t index;  // into the list of that kind
  };
  // The feature called `name`, if any.
  std::optional<Ref> Find(std::string_view name) const {
    std::optional<Ref> ref;
    auto find = [&](const auto& list, FeatureKind kind) {
      for (size_t i = 0; i < list.size() && !ref; ++i) {
        if (list[i].name == name) ref = Ref{kind, i};
      }
    };
    find(numeric, FeatureKind::kNumeric);
    find(categorical, FeatureKind::kCategorical);
    find(hashed, FeatureKind::kHashed);
    find(bucketized, FeatureKind::kBucketized);
    find(crossed, FeatureKind::kCrossed);
    find(date, FeatureKind::kDate);
    find(text, FeatureKind::kText);
    return ref;
  }
  // The embedding, combiner and wide flag of a categorical, date or text
  // kind; nullptr for a numeric feature.
  const CategoricalUse* Use(Ref ref) const {
    switch (ref.kind) {
      case FeatureKind::kCategorical:
        return &categorical[ref.index];
      case FeatureKind::kHashed:
        return &hashed[ref.index];
      case FeatureKind::kBucketized:
        return &bucketized[ref.index];
      case FeatureKind::kCrossed:
        return &crossed[ref.index];
      case FeatureKind::kDate:
        return &date[ref.index];
      case FeatureKind::kText:
        return &text[ref.index];
      default:
        return nullptr;
    }
  }
  // Whether the feature feeds the wide or the deep part (numeric: its wide /
  // deep flags; categorical kinds: wide / embedding > 0).
  bool FeedsWide(Ref ref) const {
    const CategoricalUse* use = Use(ref);
    return use != nullptr ? use->wide : numeric[ref.index].wide;
  }
  bool FeedsDeep(Ref ref) const {
    const CategoricalUse* use = Use(ref);
    return use != nullptr ? use->deep() : numeric[ref.index].deep;
  }
  size_t size() const {
    return numeric.size() + categorical.size() + hashed.size() +
           bucketized.size() + crossed.size() + date.size() + text.size();
  }
  bool empty() const { return size() == 0; }
};

}  // namespace dtf
