// What `dtf init` makes of one profiled column: its schema type and format,
// and the feature it feeds (or why none). PlanColumn is the one place that
// decides; each rule there is a step, in order, so a new kind of column is a
// new step. Internal to lib/data.
#pragma once

#include <string>
#include <vector>

#include "lib/data/column_profile.h"
#include "lib/data/date_parse.h"
#include "lib/data/schema.h"

namespace dtf {

enum class PlannedFeature {
  kNone,         // kept in the records, fed to no feature (`why` says why)
  kNumeric,      // normalized; bucketized at its deciles too if `bucketize`
  kCategorical,  // a vocabulary of its values
  kHashed,       // hashed into buckets
  kDate,         // a date feature (year, month, day, weekday, hour, days)
  kText,         // free text: a bag of hashed words and word pairs
};
std::string_view PlannedFeatureName(PlannedFeature kind);

struct PlanOptions {
  // The label column's name.
  std::string label;
  // The CSV's delimiter: a decimal comma is read only when it is not ','.
  char delimiter = ',';
};

struct ColumnPlan {
  std::string name;
  ValueType type = ValueType::kString;
  ColumnFormat format = ColumnFormat::kPlain;
  PlannedFeature kind = PlannedFeature::kNone;
  bool bucketize = false;
  // Why the column feeds no feature ("label", "identifier: ..."); empty
  // otherwise.
  std::string why;
  // How its cells are read, when that is not plain ("read \"$1,200\" as
  // 1200"); empty otherwise.
  std::string note;
  // NA spellings this column holds that the schema must read as missing
  // (a numeric column's "NaN", "NA", ...).
  std::vector<std::string> na_missing;
  // Date columns: the form their cells are written in, whether any has a
  // time of day, and a cell that stands in for missing ones.
  DateFormat date_format = DateFormat::kAuto;
  bool date_has_time = false;
  std::string date_default;
  // Numeric columns (any format): mean, range and deciles of the values.
  double mean = 0, min = 0, max = 0;
  std::vector<double> deciles;  // 9 values, q = 0.1 ... 0.9
};

// Columns with at most this many distinct values get a vocabulary; more get
// hashed.
inline constexpr int64_t kMaxVocabulary = 100;
// Numeric columns with more distinct values than this are also bucketized.
inline constexpr int64_t kBucketizeAbove = 10;

ColumnPlan PlanColumn(const ColumnProfile& c, const PlanOptions& options);

// Whether every value of `c` reads under `format` (true with no values),
// and whether each reads as an int64 too.
bool ReadsAs(const ColumnProfile& c, ColumnFormat format);
bool ReadsAsInt(const ColumnProfile& c, ColumnFormat format);

}  // namespace dtf
