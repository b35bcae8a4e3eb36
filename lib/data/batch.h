// What the training input pipeline parses out of tf.train.Example records
// (FeatureParseSpec, the counterpart of tf.io.FixedLenFeature / VarLenFeature)
// and the columnar batch it hands the trainer (Batch). See
// docs/input-pipeline.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf {

// The Example list a feature is read from: int64_list, float_list or
// bytes_list.
enum class FeatureType { kInt64, kFloat, kBytes };
std::string_view FeatureTypeName(FeatureType type);  // "int64", ...

struct FeatureParseSpec {
  // Key in Example.features.
  std::string name;
  // Default: kFloat.
  FeatureType type = FeatureType::kFloat;
  // False (default): fixed length, every row holds exactly `length` values
  // (tf.io.FixedLenFeature). True: any number of values per row, an absent
  // feature being an empty row (tf.io.VarLenFeature).
  bool var_len = false;
  // Fixed length only: values per row, at least 1. Default: 1.
  int64_t length = 1;
  // Fixed length only: the row's values when a record lacks the feature.
  // Only the vector matching `type` is used: empty means an absent feature
  // is an error; one value is repeated `length` times; otherwise it must
  // hold `length` values. Default: empty.
  std::vector<int64_t> default_int64;
  std::vector<float> default_float;
  std::vector<std::string> default_bytes;

  bool has_default() const;
};

// Shorthands for the common specs.
FeatureParseSpec FixedLenFeature(std::string name, FeatureType type,
                                 int64_t length = 1);
FeatureParseSpec VarLenFeature(std::string name, FeatureType type);

// Names non-empty and unique, lengths >= 1, defaults of 0, 1 or `length`
// values, no default on a var-len feature, at least one spec.
// InvalidArgument naming the offending feature otherwise.
Status ValidateFeatureParseSpecs(const std::vector<FeatureParseSpec>& specs);

// One feature's values for every row of a batch. Which members are used:
//   fixed int64 / float: `int64s` / `floats`, rows x length, row-major;
//     `row_splits` empty.
//   var-len int64 / float: `int64s` / `floats` and `row_splits`.
//   bytes (fixed or var-len): `bytes`, `bytes_offsets` and `row_splits`.
// Storage is reused from batch to batch: clearing keeps the capacity.
struct Column {
  std::string name;
  FeatureType type = FeatureType::kFloat;
  bool var_len = false;
  // Values per row of a fixed-length column; 0 for a var-len one.
  int64_t length = 0;

  std::vector<int64_t> int64s;
  std::vector<float> floats;
  // Bytes value i is bytes[bytes_offsets[i], bytes_offsets[i + 1]);
  // bytes_offsets starts with 0 and has one entry more than there are values.
  std::string bytes;
  std::vector<int64_t> bytes_offsets;
  // Row r holds values [row_splits[r], row_splits[r + 1]); rows + 1 entries,
  // starting with 0.
  std::vector<int64_t> row_splits;

  // Rows are cut by row_splits (var-len and bytes columns), not `length`.
  bool uses_row_splits() const {
    return var_len || type == FeatureType::kBytes;
  }
  // Number of values in all rows.
  int64_t num_values() const;
  // Values in row `r`. REQUIRES: r < rows of the batch.
  int64_t row_size(int64_t r) const;
  // The values of row `r`. REQUIRES: the column's type matches and r < rows.
  std::span<const int64_t> int64_row(int64_t r) const;
  std::span<const float> float_row(int64_t r) const;
  // Bytes value `i` (0 <= i < num_values()) of a bytes column.
  std::string_view bytes_value(int64_t i) const {
    return std::string_view(bytes).substr(
        bytes_offsets[i], bytes_offsets[i + 1] - bytes_offsets[i]);
  }

  // The first and one-past-the-last value index of row `r`.
  int64_t row_begin(int64_t r) const;
  int64_t row_end(int64_t r) const { return row_begin(r + 1); }
};

// A batch of rows, one Column per FeatureParseSpec in the order the specs were
// given. Move-only in practice (copying is allowed but costs the buffers).
struct Batch {
  int64_t rows = 0;
  std::vector<Column> columns;

  // nullptr when no column has that name.
  const Column* Find(std::string_view name) const;

  // Lays the columns out for `specs` and empties them, keeping their storage.
  // Fixed numeric columns are sized for `capacity` rows at once (Finish()
  // trims them), so that filling them never reallocates.
  // REQUIRES: ValidateFeatureParseSpecs(specs) is OK.
  void Reset(const std::vector<FeatureParseSpec>& specs, int64_t capacity);
  // Trims fixed numeric columns to `rows`.
  void Finish();
};

}  // namespace dtf
