#include "lib/data/column_profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>

#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/csv_sniff.h"
#include "lib/data/csv_text.h"

namespace dtf {
namespace {

uint64_t MixHash(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Plain number: an int64, else a finite double.
bool ReadPlain(std::string_view s, double* v, bool* is_int) {
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  }
  const char* end = s.data() + s.size();
  int64_t i;
  auto [p, ec] = std::from_chars(s.data(), end, i);
  if (ec == std::errc() && p == end) {
    *v = static_cast<double>(i);
    *is_int = true;
    return true;
  }
  auto [q, ec2] = std::from_chars(s.data(), end, *v);
  *is_int = false;
  return ec2 == std::errc() && q == end && std::isfinite(*v);
}

// `cell` under `format`, as a finite double; `is_int` when it reads as an
// int64 too.
bool ReadFormatted(std::string_view cell, ColumnFormat format, double* v,
                   bool* is_int) {
  StatusOr<Value> f = ParseFormattedValue(cell, ValueType::kFloat, format);
  if (!f.ok() || !std::isfinite(std::get<double>(*f))) return false;
  *v = std::get<double>(*f);
  *is_int = ParseFormattedValue(cell, ValueType::kInt, format).ok();
  return true;
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

// 8-4-4-4-12 hex digits, or 16 or more hex digits holding a letter.
bool LooksLikeUuid(std::string_view s) {
  if (s.size() == 36) {
    for (size_t i = 0; i < s.size(); ++i) {
      const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
    }
    return true;
  }
  if (s.size() < 16) return false;
  bool letter = false;
  for (char c : s) {
    if (!IsHex(c)) return false;
    letter |= c > '9';
  }
  return letter;
}

void RecordLine(int64_t* first, int64_t line) {
  if (*first == 0) *first = line;
}

void AddValue(ColumnProfile& c, ValueCounter* counter, std::string_view cell,
              bool read_comma, DistinctCounter* distinct, int64_t* last_int) {
  ++c.values;
  const uint64_t hash = HashValue(cell);
  distinct->Add(hash);
  if (!counter->capped()) counter->Add(cell, hash);
  if (c.uuid_like && !LooksLikeUuid(cell)) c.uuid_like = false;
  // Only text is sampled: from the first value that is no plain number on
  // (dates and free text never are), so number columns copy no cells.
  auto sample = [&c, cell] {
    if (c.sampling && c.sample_cells.size() < ColumnProfile::kSampleCells) {
      c.sample_cells.emplace_back(cell);
    }
  };
  if (!c.plain.ok && !c.number.ok && !c.comma.ok) return sample();
  double v = 0;
  bool is_int = false;
  const bool plain = ReadPlain(cell, &v, &is_int);
  if (!plain && !c.sampling) {
    c.sampling = true;
    c.unsampled = c.values - 1;
  }
  sample();
  if (!plain) {
    // From here on the kNumber reading goes its own way.
    if (c.plain.ok) c.number = c.plain;
    c.plain.Fail();
    c.increasing = false;
  } else if (c.plain.ok) {
    c.plain.Add(v, is_int);
    if (is_int && c.increasing) {
      const int64_t i = static_cast<int64_t>(v);
      if (c.plain.count > 1 && i <= *last_int) c.increasing = false;
      *last_int = i;
    }
  }
  if (c.number.ok && !c.plain.ok) {
    double nv = v;
    bool n_int = is_int;
    if (plain || ReadFormatted(cell, ColumnFormat::kNumber, &nv, &n_int)) {
      c.number.Add(nv, n_int);
      if (!plain && c.first_decorated.empty()) {
        c.first_decorated = std::string(cell);
      }
    } else {
      c.number.Fail();
    }
  }
  const bool has_comma = cell.find(',') != std::string_view::npos;
  if (has_comma && c.first_comma.empty()) c.first_comma = std::string(cell);
  if (has_comma && !c.comma_not_grouping) {
    const size_t last = cell.rfind(',');
    size_t digits = 0;
    while (last + 1 + digits < cell.size() && cell[last + 1 + digits] >= '0' &&
           cell[last + 1 + digits] <= '9') {
      ++digits;
    }
    c.comma_not_grouping = digits != 3 || cell.find('.') < last;
  }
  if (!read_comma) {
    c.comma.Fail();
  } else if (c.comma.ok) {
    double cv = v;
    bool c_int = is_int;
    const bool same =
        plain && !has_comma && cell.find('.') == std::string_view::npos;
    if (same || ReadFormatted(cell, ColumnFormat::kDecimalComma, &cv, &c_int)) {
      c.comma.Add(cv, c_int);
    } else {
      c.comma.Fail();
    }
  }
}

}  // namespace

uint64_t HashValue(std::string_view value) {
  return MixHash(std::hash<std::string_view>()(value));
}

ValueCounter::ValueCounter(size_t cap) : cap_(cap) {
  size_t slots = 16;
  while (slots < 2 * cap) slots *= 2;
  slot_hash_.assign(slots, 0);
  slot_value_.assign(slots, -1);
}

void ValueCounter::Add(std::string_view value, uint64_t hash) {
  const size_t mask = slot_hash_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    if (slot_value_[i] < 0) {
      if (values_.size() >= cap_) {
        capped_ = true;
        slot_hash_ = {};
        slot_value_ = {};
        values_ = {};
        counts_ = {};
        return;
      }
      slot_hash_[i] = hash;
      slot_value_[i] = static_cast<int32_t>(values_.size());
      values_.emplace_back(value);
      counts_.push_back(1);
      return;
    }
    if (slot_hash_[i] == hash) {
      ++counts_[slot_value_[i]];
      return;
    }
  }
}

void ValueCounter::TakeCounts(std::unordered_map<std::string, int64_t>* out) {
  out->clear();
  for (size_t i = 0; i < values_.size(); ++i) {
    out->emplace(std::move(values_[i]), counts_[i]);
  }
}

void DistinctCounter::Add(uint64_t h) {
  if (full_ && h >= threshold_) return;
  hashes_.push_back(h);
  if (hashes_.size() >= 2 * kExact) Compact();
}

void DistinctCounter::Compact() {
  std::sort(hashes_.begin(), hashes_.end());
  hashes_.erase(std::unique(hashes_.begin(), hashes_.end()), hashes_.end());
  if (hashes_.size() >= kExact) {
    hashes_.resize(kExact);
    full_ = true;
    threshold_ = hashes_.back();
  }
}

int64_t DistinctCounter::Count() {
  Compact();
  if (!full_) return static_cast<int64_t>(hashes_.size());
  // The kExact-th smallest of n uniform hashes sits near kExact / n of the
  // range.
  const double fraction =
      static_cast<double>(threshold_) / 18446744073709551616.0;
  return std::llround(static_cast<double>(kExact - 1) / fraction);
}

void NumericStats::Add(double v, bool is_int) {
  if (!ok) return;
  all_int = all_int && is_int;
  ++count;
  sum += v;
  min = std::min(min, v);
  max = std::max(max, v);
  if (sample.size() < kMaxSample) {
    sample.push_back(v);
  } else {
    const uint64_t j =
        MixHash(static_cast<uint64_t>(count)) % static_cast<uint64_t>(count);
    if (j < kMaxSample) sample[j] = v;
  }
}

void NumericStats::Fail() {
  ok = false;
  all_int = false;
  sample.clear();
  sample.shrink_to_fit();
}

double NumericStats::Quantile(double q) const {
  if (sample.empty()) return 0;
  double pos = q * static_cast<double>(sample.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sample.size() - 1);
  return sample[lo] +
         (pos - static_cast<double>(lo)) * (sample[hi] - sample[lo]);
}

StatusOr<std::vector<ColumnProfile>> ProfileCsv(
    const std::string& path, const CsvOptions& csv,
    const std::vector<std::string>& missing, int64_t max_rows,
    std::string_view label) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  CsvChunker chunker(std::move(file), csv);
  std::vector<ColumnProfile> columns;
  std::vector<DistinctCounter> distinct;
  std::vector<int64_t> last_int;
  std::vector<ValueCounter> counters;
  const bool read_comma = csv.delimiter != ',';
  CsvChunk chunk;
  CsvRow row;
  bool header = true;
  int64_t rows = 0;
  while (max_rows <= 0 || rows < max_rows) {
    DTF_ASSIGN_OR_RETURN(bool more, chunker.Next(&chunk));
    if (!more) break;
    CsvChunkParser parser(chunk, csv);
    while (max_rows <= 0 || rows < max_rows) {
      DTF_ASSIGN_OR_RETURN(bool got, parser.Next(&row));
      if (!got) break;
      if (header) {
        DTF_RETURN_IF_ERROR(CheckHeaderText(path, row, csv));
        std::vector<std::string> names;
        std::map<std::string_view, size_t> seen;
        for (size_t i = 0; i < row.fields.size(); ++i) {
          names.emplace_back(row.fields[i]);
          const auto [it, added] = seen.emplace(row.fields[i], i);
          if (!added) {
            const size_t j = it->second;
            return InvalidArgumentError(StrCat(
                path, ":", row.line, ":", row.columns[i], ": duplicate column ",
                QuoteForMessage(names[i]), " (also at ", path, ":", row.line,
                ":", row.columns[j], "); give each column a name of its own"));
          }
          columns.emplace_back();
          columns.back().name = names[i];
          columns.back().header_column = row.columns[i];
        }
        DTF_RETURN_IF_ERROR(CheckHeaderSplit(path, names, csv.delimiter));
        distinct.resize(columns.size());
        for (const ColumnProfile& c : columns) {
          counters.emplace_back(c.name == label
                                    ? ColumnProfile::kMaxLabelCounted
                                    : ColumnProfile::kMaxCounted);
        }
        last_int.assign(columns.size(), 0);
        header = false;
        continue;
      }
      DTF_RETURN_IF_ERROR(
          CheckFieldCount(path, row, columns.size(), /*header=*/true));
      ++rows;
      for (size_t i = 0; i < columns.size(); ++i) {
        std::string_view cell = row.fields[i];
        ColumnProfile& c = columns[i];
        DTF_RETURN_IF_ERROR(CheckTextCell(path, row, i, csv.quote, c.name));
        if (cell.empty() ||
            std::find(missing.begin(), missing.end(), cell) != missing.end()) {
          ++c.missing;
          RecordLine(&c.first_missing_line, row.line);
        } else if (IsNaSpelling(cell)) {
          ++c.na_counts[std::string(cell)];
          RecordLine(&c.first_na_line, row.line);
        } else {
          AddValue(c, &counters[i], cell, read_comma, &distinct[i],
                   &last_int[i]);
        }
      }
    }
  }
  if (header) {
    return InvalidArgumentError(StrCat(path, ": no header line"));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    ColumnProfile& c = columns[i];
    c.distinct = distinct[i].Count();
    c.counts_capped = counters[i].capped();
    if (!c.counts_capped) counters[i].TakeCounts(&c.counts);
    if (c.values == 0) {
      c.plain.Fail();
      c.number.Fail();
      c.comma.Fail();
      c.uuid_like = false;
      c.increasing = false;
    }
    for (NumericStats* s : {&c.plain, &c.number, &c.comma}) {
      std::sort(s->sample.begin(), s->sample.end());
    }
  }
  return columns;
}

}  // namespace dtf
