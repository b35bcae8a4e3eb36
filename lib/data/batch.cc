#include "lib/data/batch.h"

#include <set>
#include <utility>

#include "lib/base/strings.h"

namespace dtf {
namespace {

size_t DefaultSize(const FeatureParseSpec& s) {
  switch (s.type) {
    case FeatureType::kInt64:
      return s.default_int64.size();
    case FeatureType::kFloat:
      return s.default_float.size();
    case FeatureType::kBytes:
      return s.default_bytes.size();
  }
  return 0;
}

}  // namespace

std::string_view FeatureTypeName(FeatureType type) {
  switch (type) {
    case FeatureType::kInt64:
      return "int64";
    case FeatureType::kFloat:
      return "float";
    case FeatureType::kBytes:
      return "bytes";
  }
  return "?";
}

bool FeatureParseSpec::has_default() const { return DefaultSize(*this) > 0; }

FeatureParseSpec FixedLenFeature(std::string name, FeatureType type,
                                 int64_t length) {
  FeatureParseSpec s;
  s.name = std::move(name);
  s.type = type;
  s.length = length;
  return s;
}

FeatureParseSpec VarLenFeature(std::string name, FeatureType type) {
  FeatureParseSpec s;
  s.name = std::move(name);
  s.type = type;
  s.var_len = true;
  return s;
}

Status ValidateFeatureParseSpecs(const std::vector<FeatureParseSpec>& specs) {
  if (specs.empty()) return InvalidArgumentError("no features to parse");
  std::set<std::string_view> names;
  for (size_t i = 0; i < specs.size(); ++i) {
    const FeatureParseSpec& s = specs[i];
    if (s.name.empty()) {
      return InvalidArgumentError(StrCat("features[", i, "]: empty name"));
    }
    if (!names.insert(s.name).second) {
      return InvalidArgumentError(
          StrCat("feature \"", s.name, "\": listed twice"));
    }
    const size_t defaults = DefaultSize(s);
    if (s.var_len) {
      if (defaults > 0) {
        return InvalidArgumentError(StrCat(
            "feature \"", s.name, "\": a var-len feature takes no default"));
      }
      continue;
    }
    if (s.length < 1) {
      return InvalidArgumentError(StrCat("feature \"", s.name, "\": length ",
                                         s.length, " is not at least 1"));
    }
    if (defaults > 1 && defaults != static_cast<size_t>(s.length)) {
      return InvalidArgumentError(StrCat("feature \"", s.name,
                                         "\": default has ", defaults,
                                         " values; expected 1 or ", s.length));
    }
  }
  return OkStatus();
}

int64_t Column::num_values() const {
  if (uses_row_splits()) return row_splits.empty() ? 0 : row_splits.back();
  return static_cast<int64_t>(type == FeatureType::kInt64 ? int64s.size()
                                                          : floats.size());
}

int64_t Column::row_begin(int64_t r) const {
  return uses_row_splits() ? row_splits[r] : r * length;
}

int64_t Column::row_size(int64_t r) const { return row_end(r) - row_begin(r); }

std::span<const int64_t> Column::int64_row(int64_t r) const {
  return std::span<const int64_t>(int64s).subspan(row_begin(r), row_size(r));
}

std::span<const float> Column::float_row(int64_t r) const {
  return std::span<const float>(floats).subspan(row_begin(r), row_size(r));
}

const Column* Batch::Find(std::string_view name) const {
  for (const Column& c : columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void Batch::Reset(const std::vector<FeatureParseSpec>& specs,
                  int64_t capacity) {
  rows = 0;
  columns.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const FeatureParseSpec& s = specs[i];
    Column& c = columns[i];
    if (c.name != s.name) c.name = s.name;
    c.type = s.type;
    c.var_len = s.var_len;
    c.length = s.var_len ? 0 : s.length;
    c.bytes.clear();
    c.bytes_offsets.assign(1, 0);
    c.row_splits.assign(1, 0);
    const bool fixed_numeric = !c.uses_row_splits();
    const size_t fixed_size = fixed_numeric ? capacity * c.length : 0;
    if (s.type == FeatureType::kInt64) {
      c.int64s.resize(fixed_size);
    } else {
      c.int64s.clear();
    }
    if (s.type == FeatureType::kFloat) {
      c.floats.resize(fixed_size);
    } else {
      c.floats.clear();
    }
    if (fixed_numeric) {
      c.row_splits.clear();
      c.bytes_offsets.clear();
    } else if (s.type != FeatureType::kBytes) {
      c.bytes_offsets.clear();
    }
  }
}

void Batch::Finish() {
  for (Column& c : columns) {
    if (c.uses_row_splits()) continue;
    const size_t n = rows * c.length;
    if (c.type == FeatureType::kInt64) {
      c.int64s.resize(n);
    } else {
      c.floats.resize(n);
    }
  }
}

}  // namespace dtf
