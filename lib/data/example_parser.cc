#include "lib/data/example_parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/wire_format.h"

namespace dtf {
namespace {

using wire::kLengthDelimited;
using wire::MakeTag;

using wire::kEntryTag;
using wire::kFeaturesTag;
using wire::kKeyTag;
using wire::kListValueTag;
using wire::kValueTag;

constexpr uint32_t ListTag(FeatureType type) {
  switch (type) {
    case FeatureType::kBytes:
      return MakeTag(wire::kBytesList, kLengthDelimited);
    case FeatureType::kFloat:
      return MakeTag(wire::kFloatList, kLengthDelimited);
    case FeatureType::kInt64:
      return MakeTag(wire::kInt64List, kLengthDelimited);
  }
  return 0;
}

Feature::Kind KindOf(FeatureType type) {
  switch (type) {
    case FeatureType::kBytes:
      return Feature::Kind::kBytes;
    case FeatureType::kFloat:
      return Feature::Kind::kFloat;
    case FeatureType::kInt64:
      return Feature::Kind::kInt64;
  }
  return Feature::Kind::kNone;
}

std::string_view KindName(Feature::Kind kind) {
  switch (kind) {
    case Feature::Kind::kBytes:
      return "bytes";
    case Feature::Kind::kFloat:
      return "float";
    case Feature::Kind::kInt64:
      return "int64";
    case Feature::Kind::kNone:
      break;
  }
  return "no";
}

// Consumes `tag` at *p when the byte there is that tag. Every tag the fast
// path accepts is one byte; any other encoding of it takes the slow path.
inline bool Expect(const char** p, const char* end, uint32_t tag) {
  if (*p == end || static_cast<unsigned char>(**p) != tag) return false;
  ++*p;
  return true;
}

// Length() for a length of more than one byte.
[[gnu::noinline]] bool LongLength(const char** p, const char* end,
                                  const char** field_end) {
  const char* start = *p;
  uint64_t n;
  if (!wire::DecodeVarint(p, end, &n) || *p - start > 5 ||
      n > static_cast<uint64_t>(end - *p)) {
    return false;
  }
  *field_end = *p + n;
  return true;
}

// Reads the length of a length-delimited field (at most 5 bytes) whose bytes
// all lie before `end`; `*field_end` receives the end of those bytes.
inline bool Length(const char** p, const char* end, const char** field_end) {
  if (*p == end || static_cast<unsigned char>(**p) >= 0x80) {
    return LongLength(p, end, field_end);
  }
  const size_t n = static_cast<unsigned char>(*(*p)++);
  if (n > static_cast<size_t>(end - *p)) return false;
  *field_end = *p + n;
  return true;
}

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// a[0, n) == b[0, n), without a call for the short keys features have.
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    return Load64(a) == Load64(b) && Load64(a + n - 8) == Load64(b + n - 8);
  }
  if (n >= 4) {
    return Load32(a) == Load32(b) && Load32(a + n - 4) == Load32(b + n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool UsesRowSplits(const FeatureParseSpec& s) {
  return s.var_len || s.type == FeatureType::kBytes;
}

// `values` as a row of `length`: itself, or its one value repeated.
template <typename T>
std::vector<T> ExpandDefault(const std::vector<T>& values, int64_t length) {
  if (values.size() != 1) return values;
  return std::vector<T>(length, values[0]);
}

void AppendBytes(const char* data, size_t n, Column* c) {
  c->bytes.append(data, n);
  c->bytes_offsets.push_back(static_cast<int64_t>(c->bytes.size()));
}

}  // namespace

ExampleParser::ExampleParser(std::vector<FeatureParseSpec> specs)
    : specs_(std::move(specs)) {
  const size_t n = specs_.size();
  int64_defaults_.resize(n);
  float_defaults_.resize(n);
  bytes_defaults_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const FeatureParseSpec& s = specs_[i];
    if (s.var_len) continue;
    int64_defaults_[i] = ExpandDefault(s.default_int64, s.length);
    float_defaults_[i] = ExpandDefault(s.default_float, s.length);
    bytes_defaults_[i] = ExpandDefault(s.default_bytes, s.length);
  }
  std::vector<int> by_name(n);
  for (size_t i = 0; i < n; ++i) {
    index_.emplace(specs_[i].name, static_cast<int>(i));
    names_.push_back(specs_[i].name);
    by_name[i] = static_cast<int>(i);
  }
  std::sort(by_name.begin(), by_name.end(),
            [&](int a, int b) { return specs_[a].name < specs_[b].name; });
  first_ = n > 0 ? by_name[0] : -1;
  next_.assign(n, -1);
  for (size_t r = 0; r + 1 < n; ++r) next_[by_name[r]] = by_name[r + 1];
  seen_.assign(n, 0);
}

Status ExampleParser::AddRow(std::string_view record, Batch* batch) {
  ++row_mark_;
  prev_ = -1;
  seen_count_ = 0;
  if (ParseFast(record, batch) == Fast::kOk) {
    Status st = FillAbsent(batch);
    if (st.ok()) {
      ++batch->rows;
      return st;
    }
    Rollback(batch);
    return st;
  }
  Rollback(batch);
  ++row_mark_;
  seen_count_ = 0;
  Status st = ParseSlow(record, batch);
  if (!st.ok()) {
    Rollback(batch);
    return st;
  }
  ++batch->rows;
  return OkStatus();
}

int ExampleParser::Lookup(std::string_view key) {
  const int guess = prev_ < 0 ? first_ : next_[prev_];
  if (guess >= 0) {
    const std::string_view name = names_[guess];
    if (name.size() == key.size() &&
        SameBytes(name.data(), key.data(), key.size())) {
      prev_ = guess;
      return guess;
    }
  }
  return LookupSlow(key);
}

int ExampleParser::LookupSlow(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return -1;
  const int i = it->second;
  (prev_ < 0 ? first_ : next_[prev_]) = i;
  prev_ = i;
  return i;
}

ExampleParser::Fast ExampleParser::ParseFast(std::string_view record,
                                             Batch* batch) {
  const char* p = record.data();
  const char* end = p + record.size();
  const char* features_end;
  if (p == end) return Fast::kOk;
  if (!Expect(&p, end, kFeaturesTag) || !Length(&p, end, &features_end) ||
      features_end != end) {
    return Fast::kSlow;
  }
  while (p < end) {
    const char* entry_end;
    if (!Expect(&p, end, kEntryTag) || !Length(&p, end, &entry_end) ||
        ParseEntry(p, entry_end, batch) != Fast::kOk) {
      return Fast::kSlow;
    }
    p = entry_end;
  }
  return Fast::kOk;
}

ExampleParser::Fast ExampleParser::ParseEntry(const char* p, const char* end,
                                              Batch* batch) {
  const char* key_end;
  if (!Expect(&p, end, kKeyTag) || !Length(&p, end, &key_end)) {
    return Fast::kSlow;
  }
  const std::string_view key(p, key_end - p);
  p = key_end;
  const char* value_end;
  if (!Expect(&p, end, kValueTag) || !Length(&p, end, &value_end) ||
      value_end != end) {
    return Fast::kSlow;
  }
  const int i = Lookup(key);
  if (i < 0) return Fast::kOk;
  const char* list_end;
  if (seen_[i] == row_mark_ || !Expect(&p, end, ListTag(specs_[i].type)) ||
      !Length(&p, end, &list_end) || list_end != end) {
    return Fast::kSlow;
  }
  seen_[i] = row_mark_;
  ++seen_count_;
  return ParseList(p, end, i, batch);
}

ExampleParser::Fast ExampleParser::ParseList(const char* p, const char* end,
                                             int index, Batch* batch) {
  const FeatureParseSpec& s = specs_[index];
  Column& c = batch->columns[index];
  if (s.type == FeatureType::kBytes) {
    int64_t count = 0;
    while (p < end) {
      const char* value_end;
      if (!Expect(&p, end, kListValueTag) || !Length(&p, end, &value_end)) {
        return Fast::kSlow;
      }
      AppendBytes(p, value_end - p, &c);
      p = value_end;
      ++count;
    }
    if (!s.var_len && count != s.length) return Fast::kSlow;
    CloseRow(&c);
    return Fast::kOk;
  }
  // One packed run, or none for an empty list.
  const char* data = p;
  if (p < end) {
    const char* run_end;
    if (!Expect(&p, end, kListValueTag) || !Length(&p, end, &run_end) ||
        run_end != end) {
      return Fast::kSlow;
    }
    data = p;
  }
  const int64_t row = batch->rows;
  if (s.type == FeatureType::kFloat) {
    const size_t n = end - data;
    if (n % 4 != 0) return Fast::kSlow;
    const int64_t count = static_cast<int64_t>(n / 4);
    if (!s.var_len) {
      if (count != s.length) return Fast::kSlow;
      std::memcpy(c.floats.data() + row * s.length, data, n);
      return Fast::kOk;
    }
    const size_t old = c.floats.size();
    c.floats.resize(old + count);
    std::memcpy(c.floats.data() + old, data, n);
    CloseRow(&c);
    return Fast::kOk;
  }
  uint64_t v;
  if (!s.var_len) {
    int64_t* out = c.int64s.data() + row * s.length;
    int64_t count = 0;
    while (data < end) {
      if (count == s.length || !wire::DecodeVarint(&data, end, &v)) {
        return Fast::kSlow;
      }
      out[count++] = static_cast<int64_t>(v);
    }
    return count == s.length ? Fast::kOk : Fast::kSlow;
  }
  while (data < end) {
    if (!wire::DecodeVarint(&data, end, &v)) return Fast::kSlow;
    c.int64s.push_back(static_cast<int64_t>(v));
  }
  CloseRow(&c);
  return Fast::kOk;
}

void ExampleParser::CloseRow(Column* c) {
  if (c->type == FeatureType::kBytes) {
    c->row_splits.push_back(static_cast<int64_t>(c->bytes_offsets.size()) - 1);
  } else if (c->type == FeatureType::kFloat) {
    c->row_splits.push_back(static_cast<int64_t>(c->floats.size()));
  } else {
    c->row_splits.push_back(static_cast<int64_t>(c->int64s.size()));
  }
}

Status ExampleParser::FillAbsent(Batch* batch) {
  if (seen_count_ == specs_.size()) return OkStatus();
  const int64_t row = batch->rows;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (seen_[i] == row_mark_) continue;
    const FeatureParseSpec& s = specs_[i];
    Column& c = batch->columns[i];
    if (s.var_len) {
      CloseRow(&c);
      continue;
    }
    if (!s.has_default()) {
      return InvalidArgumentError(
          StrCat("feature \"", s.name, "\": absent and has no default"));
    }
    switch (s.type) {
      case FeatureType::kInt64:
        std::copy(int64_defaults_[i].begin(), int64_defaults_[i].end(),
                  c.int64s.begin() + row * s.length);
        break;
      case FeatureType::kFloat:
        std::copy(float_defaults_[i].begin(), float_defaults_[i].end(),
                  c.floats.begin() + row * s.length);
        break;
      case FeatureType::kBytes:
        for (const std::string& b : bytes_defaults_[i]) {
          AppendBytes(b.data(), b.size(), &c);
        }
        CloseRow(&c);
        break;
    }
  }
  return OkStatus();
}

void ExampleParser::Rollback(Batch* batch) const {
  const size_t rows = static_cast<size_t>(batch->rows);
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!UsesRowSplits(specs_[i])) continue;
    Column& c = batch->columns[i];
    c.row_splits.resize(rows + 1);
    const size_t values = static_cast<size_t>(c.row_splits.back());
    if (c.type == FeatureType::kBytes) {
      c.bytes_offsets.resize(values + 1);
      c.bytes.resize(c.bytes_offsets.back());
    } else if (c.type == FeatureType::kFloat) {
      c.floats.resize(values);
    } else {
      c.int64s.resize(values);
    }
  }
}

Status ExampleParser::ParseSlow(std::string_view record, Batch* batch) {
  DTF_RETURN_IF_ERROR(DecodeExample(record, &example_));
  for (size_t i = 0; i < specs_.size(); ++i) {
    const Feature* f = example_.Find(specs_[i].name);
    if (f == nullptr || f->kind == Feature::Kind::kNone) continue;
    DTF_RETURN_IF_ERROR(AddFeature(static_cast<int>(i), *f, batch));
    seen_[i] = row_mark_;
    ++seen_count_;
  }
  return FillAbsent(batch);
}

Status ExampleParser::AddFeature(int index, const Feature& f, Batch* batch) {
  const FeatureParseSpec& s = specs_[index];
  Column& c = batch->columns[index];
  if (f.kind != KindOf(s.type)) {
    return InvalidArgumentError(StrCat("feature \"", s.name, "\": expected ",
                                       FeatureTypeName(s.type), " values, got ",
                                       KindName(f.kind)));
  }
  auto copy = [&](const auto& values, auto* column) -> Status {
    if (!s.var_len) {
      if (values.size() != static_cast<size_t>(s.length)) {
        return WrongCount(index, values.size());
      }
      std::copy(values.begin(), values.end(),
                column->begin() + batch->rows * s.length);
      return OkStatus();
    }
    column->insert(column->end(), values.begin(), values.end());
    CloseRow(&c);
    return OkStatus();
  };
  switch (s.type) {
    case FeatureType::kInt64:
      return copy(f.int64_list, &c.int64s);
    case FeatureType::kFloat:
      return copy(f.float_list, &c.floats);
    case FeatureType::kBytes:
      if (!s.var_len && f.bytes_list.size() != static_cast<size_t>(s.length)) {
        return WrongCount(index, f.bytes_list.size());
      }
      for (const std::string& b : f.bytes_list) {
        AppendBytes(b.data(), b.size(), &c);
      }
      CloseRow(&c);
      return OkStatus();
  }
  return OkStatus();
}

Status ExampleParser::WrongCount(int index, size_t got) const {
  const FeatureParseSpec& s = specs_[index];
  return InvalidArgumentError(StrCat("feature \"", s.name, "\": expected ",
                                     s.length, " values, got ", got));
}

}  // namespace dtf
