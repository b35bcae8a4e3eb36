// What a CSV's columns hold, for choosing a schema and feature columns:
// missing cells (empty, a given token, or a spelling of NA such as "NaN"),
// distinct values (counted exactly up to a cap, then estimated), and each
// column's values read three ways: as plain numbers, as numbers with
// currency signs, groups and percent signs (ColumnFormat::kNumber), and with
// a decimal comma. Internal to lib/data.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/csv_reader.h"
#include "lib/data/schema.h"

namespace dtf {

// Counts distinct strings: exactly while there are fewer than kExact, then
// estimates from the kExact smallest 64-bit hashes (a k-minimum-values
// sketch; relative error about 1/sqrt(kExact), ~1%). Not thread-safe.
class DistinctCounter {
 public:
  static constexpr size_t kExact = 8192;
  // `hash`: a well-mixed 64-bit hash of the value (HashValue).
  void Add(uint64_t hash);
  int64_t Count();

 private:
  void Compact();
  std::vector<uint64_t> hashes_;  // unsorted since the last Compact
  uint64_t threshold_ = std::numeric_limits<uint64_t>::max();
  bool full_ = false;  // kExact distinct hashes seen: threshold_ applies
};

// The 64-bit hash DistinctCounter and ValueCounter take.
uint64_t HashValue(std::string_view value);

// Counts each distinct string while there are at most `cap` of them, in one
// flat open-addressing table keyed by the 64-bit hash (two values with the
// same hash count as one: about 1 in 10^13 for 1000 values). Past the cap
// it stops and frees its memory. Not thread-safe.
class ValueCounter {
 public:
  explicit ValueCounter(size_t cap = 0);
  void Add(std::string_view value, uint64_t hash);
  bool capped() const { return capped_; }
  // Moves the counts into `*out`; REQUIRES: !capped().
  void TakeCounts(std::unordered_map<std::string, int64_t>* out);

 private:
  size_t cap_;
  bool capped_ = false;
  std::vector<uint64_t> slot_hash_;
  std::vector<int32_t> slot_value_;  // -1: empty
  std::vector<std::string> values_;
  std::vector<int64_t> counts_;
};

// A column's values read one way.
struct NumericStats {
  static constexpr size_t kMaxSample = 100000;
  bool ok = true;       // every value reads as a finite number
  bool all_int = true;  // ... as an int64
  int64_t count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  // A uniform sample of up to kMaxSample values; sorted once profiled.
  std::vector<double> sample;

  void Add(double v, bool is_int);
  void Fail();
  double mean() const { return count ? sum / static_cast<double>(count) : 0; }
  // The q-quantile (0 <= q <= 1) of the sample.
  double Quantile(double q) const;
};

struct ColumnProfile {
  std::string name;
  int32_t header_column = 1;  // 1-based column of its header field
  int64_t values = 0;         // cells that are neither missing nor NA
  int64_t missing = 0;        // empty cells and `missing` tokens
  // Cells spelled as NA (kNaSpellings), by spelling.
  std::map<std::string, int64_t> na_counts;
  // Lines of the first missing and the first NA cell; 0 when there is none.
  int64_t first_missing_line = 0;
  int64_t first_na_line = 0;
  // Distinct values and their counts while there are at most kMaxCounted
  // (kMaxLabelCounted for the label); emptied (counts_capped) past that.
  // Enough for a vocabulary, true/false spellings and a label's classes.
  static constexpr size_t kMaxCounted = 128;
  static constexpr size_t kMaxLabelCounted = 1000;
  std::unordered_map<std::string, int64_t> counts;
  bool counts_capped = false;
  // Distinct values: exact up to DistinctCounter::kExact, then estimated.
  int64_t distinct = 0;
  NumericStats plain;  // read as ParseValue reads them
  // Read as ColumnFormat::kNumber; while `plain` is ok it is the same and
  // stays empty, so use Number().
  NumericStats number;
  NumericStats comma;  // read as kDecimalComma (ok = false for ',' files)
  // A value kNumber reads but ParseValue does not ("$1,200"); empty if none.
  std::string first_decorated;
  // A value holding ',' (a decimal comma candidate); empty if none.
  std::string first_comma;
  // Some value's last ',' is no thousands separator: not followed by
  // exactly three digits ("3,14"), or after a '.' ("1.234,5").
  bool comma_not_grouping = false;
  // Plain ints, each larger than the one before.
  bool increasing = true;
  // Every value looks like a UUID or a long hex key.
  bool uuid_like = true;
  // Up to kSampleCells values, as written, from the first one that is no
  // plain number on: what the date and free-text detectors (column_kind.h)
  // look at. `unsampled`: the values before it (plain numbers).
  static constexpr size_t kSampleCells = 1000;
  std::vector<std::string> sample_cells;
  bool sampling = false;
  int64_t unsampled = 0;

  const NumericStats& Number() const { return plain.ok ? plain : number; }

  int64_t na() const {
    int64_t n = 0;
    for (const auto& [spelling, count] : na_counts) n += count;
    return n;
  }
  int64_t cells() const { return values + missing + na(); }
  // Distinct values over values (0 with no values).
  double distinct_ratio() const {
    return values ? static_cast<double>(distinct) / static_cast<double>(values)
                  : 0;
  }
};

// Profiles the data rows of `path` (a CSV with a header line), up to
// `max_rows` of them (0: all); cells equal to one of `missing` (or empty)
// are missing. The column named `label` keeps more distinct values. Errors:
// I/O; a file that looks binary (CheckLooksLikeText); a header name or a
// cell that is not UTF-8 text (CheckHeaderText, CheckTextCell:
// "path:line:col: ..."); a row whose field count differs from the header's
// (CheckFieldCount: "path:line:col: row has N fields, the header has M"); a
// header naming a column twice ("path:1:col: duplicate column ..."); a header
// that is one field holding another delimiter (CheckHeaderSplit).
StatusOr<std::vector<ColumnProfile>> ProfileCsv(
    const std::string& path, const CsvOptions& csv,
    const std::vector<std::string>& missing, int64_t max_rows,
    std::string_view label = {});

}  // namespace dtf
