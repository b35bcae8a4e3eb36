// Internal to lib/data: reading TOML documents with toml++ and reporting
// errors as "<file>:<line>:<col>: <key>: what is wrong", and writing TOML
// strings and keys.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/schema_internal.h"
#include "lib/data/toml_text.h"

namespace dtf::toml_util {

// "a string", "an integer", ...: what a node holds, for messages.
inline std::string_view Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

// A scalar's value as a message shows it ("x" quoted, 1.5, true); otherwise
// Describe().
inline std::string Text(const toml::node& node) {
  if (const auto* s = node.as_string()) return QuoteForMessage(s->get());
  if (const auto* i = node.as_integer()) return absl::StrCat(i->get());
  if (const auto* f = node.as_floating_point()) {
    return ValueToString(Value(f->get()));
  }
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::string(Describe(node));
}

inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

inline std::string Join(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// The document at `path`; a syntax error is InvalidArgument
// "<path>:<line>:<col>: what is wrong".
inline StatusOr<toml::table> ParseFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  auto error = [&](std::string_view description,
                   const toml::source_region& where) {
    return InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: %s", path, where.begin.line,
                        where.begin.column, description));
  };
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return error(e.description(), e.source());
  }
#else
  toml::parse_result result = toml::parse(text, path);
  if (!result)
    return error(result.error().description(), result.error().source());
  return std::move(result).table();
#endif
}

// The entries of `table` in the order they appear in the file.
inline std::vector<std::pair<const toml::key*, const toml::node*>> InFileOrder(
    const toml::table& table) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const toml::source_position& x = a.first->source().begin;
    const toml::source_position& y = b.first->source().begin;
    return std::pair(x.line, x.column) < std::pair(y.line, y.column);
  });
  return entries;
}

// `path` as written in a file in `dir`: an absolute path normalized, a
// relative one joined to `dir`; "-" (standard input) as is.
inline std::string ResolvePath(const std::string& dir,
                               const std::string& path) {
  if (path == "-") return path;
  const std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (std::filesystem::path(dir) / p).lexically_normal().string();
}

// The entry of `allowed` closest to `name` (edit distance under 3 and under
// name's length), or "" when none is.
inline std::string_view Closest(
    std::string_view name, std::initializer_list<std::string_view> allowed) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view candidate : allowed) {
    const size_t d = EditDistance(name, candidate);
    if (d < best_distance && d < name.size()) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

// A TOML table as the spec parsers (feature_spec.h, model_spec.h,
// train_spec.h) take it, so that their public headers forward-declare this
// instead of including toml++.
struct Table {
  const toml::table& table;
};

// Reads values out of one TOML file, remembering where each key was so that
// later checks can point at it. Not thread-safe.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  Status Error(const toml::source_region& where, std::string_view key,
               std::string_view what) const {
    return InvalidArgumentError(absl::StrFormat(
        "%s:%d:%d: %s: %s", file_, std::max<uint32_t>(where.begin.line, 1),
        std::max<uint32_t>(where.begin.column, 1), key, what));
  }
  Status Error(const toml::node& node, std::string_view key,
               std::string_view what) const {
    return Error(node.source(), key, what);
  }

  void Remember(const std::string& key, const toml::node& node) {
    where_[key] = node.source();
  }
  // Where `key` or, failing that, its nearest remembered parent was.
  toml::source_region Where(std::string key) const {
    for (;;) {
      if (auto it = where_.find(key); it != where_.end()) return it->second;
      const size_t cut = key.find_last_of(".[");
      if (cut == std::string::npos || cut == 0) return {};
      key.resize(cut);
    }
  }

  // An error naming the first key of `table` (in file order) that is not in
  // `allowed`, with the closest allowed key as a suggestion. An empty `path`
  // means the document's top level, whose keys are tables.
  Status CheckKeys(const toml::table& table, std::string_view path,
                   std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, node] : InFileOrder(table)) {
      const std::string_view name = key->str();
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) {
        continue;
      }
      const std::string_view best = Closest(name, allowed);
      const std::string_view noun = path.empty() ? "table" : "key";
      const std::string what =
          best.empty()
              ? absl::StrFormat("unknown %s (expected one of %s)", noun,
                                Join(allowed))
              : absl::StrFormat("unknown %s (did you mean %s?)", noun, best);
      return Error(key->source(),
                   path.empty() ? KeyPart(name)
                                : absl::StrFormat("%s.%s", path, KeyPart(name)),
                   what);
    }
    return OkStatus();
  }

  StatusOr<std::string> GetString(const toml::node& node,
                                  std::string_view key) const {
    if (const auto* s = node.as_string()) return s->get();
    return Error(node, key,
                 absl::StrFormat("expected a string, got %s", Describe(node)));
  }
  StatusOr<bool> GetBool(const toml::node& node, std::string_view key) const {
    if (const auto* b = node.as_boolean()) return b->get();
    return Error(node, key,
                 absl::StrFormat("expected true or false, got %s", Text(node)));
  }
  StatusOr<int64_t> GetInt(const toml::node& node, std::string_view key) const {
    if (const auto* i = node.as_integer()) return i->get();
    return Error(node, key,
                 absl::StrFormat("expected an integer, got %s", Text(node)));
  }
  // A float, or an integer read as one.
  StatusOr<double> GetNumber(const toml::node& node,
                             std::string_view key) const {
    if (const auto* f = node.as_floating_point()) return f->get();
    if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
    return Error(node, key,
                 absl::StrFormat("expected a number, got %s", Text(node)));
  }
  // A string or an array of strings, as a list.
  StatusOr<std::vector<std::string>> GetStrings(const toml::node& node,
                                                std::string_view key) const {
    if (const auto* s = node.as_string()) return std::vector{s->get()};
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      return Error(node, key,
                   absl::StrFormat("expected a list of strings, got %s",
                                   Describe(node)));
    }
    std::vector<std::string> out;
    for (size_t i = 0; i < array->size(); ++i) {
      DTF_ASSIGN_OR_RETURN(
          std::string s,
          GetString(*array->get(i), absl::StrFormat("%s[%d]", key, i)));
      out.push_back(std::move(s));
    }
    return out;
  }

  // An integer >= `min`.
  StatusOr<int64_t> GetIntAtLeast(const toml::node& node, std::string_view key,
                                  int64_t min) const {
    DTF_ASSIGN_OR_RETURN(const int64_t value, GetInt(node, key));
    if (value < min) {
      return Error(node, key,
                   absl::StrFormat("must be at least %d, got %d", min, value));
    }
    return value;
  }
  // A finite number.
  StatusOr<double> GetFinite(const toml::node& node,
                             std::string_view key) const {
    DTF_ASSIGN_OR_RETURN(const double value, GetNumber(node, key));
    if (!std::isfinite(value)) {
      return Error(node, key,
                   absl::StrFormat("must be finite, got %s", Text(node)));
    }
    return value;
  }
  // The index in `choices` of the string at `node`; an error lists the
  // choices and suggests the closest.
  StatusOr<int> GetChoice(
      const toml::node& node, std::string_view key,
      std::initializer_list<std::string_view> choices) const {
    DTF_ASSIGN_OR_RETURN(const std::string name, GetString(node, key));
    int index = 0;
    for (std::string_view choice : choices) {
      if (choice == name) return index;
      ++index;
    }
    const std::string_view best = Closest(name, choices);
    return Error(node, key,
                 best.empty()
                     ? absl::StrFormat("expected one of %s, got %s",
                                       Join(choices), QuoteForMessage(name))
                     : absl::StrFormat("unknown value %s (did you mean %s?)",
                                       QuoteForMessage(name), best));
  }

  // Optional keys of `table`: when `name` is there, remembers it as
  // "<path>.<name>" and reads it into *out; otherwise leaves *out as is.
  Status ReadBool(const toml::table& table, std::string_view path,
                  std::string_view name, bool* out) {
    return ReadKey(table, path, name, out,
                   [&](const toml::node& n, const std::string& key) {
                     return GetBool(n, key);
                   });
  }
  Status ReadInt(const toml::table& table, std::string_view path,
                 std::string_view name, int64_t min, int64_t* out) {
    return ReadKey(table, path, name, out,
                   [&](const toml::node& n, const std::string& key) {
                     return GetIntAtLeast(n, key, min);
                   });
  }
  template <typename T>  // double or std::optional<double>
  Status ReadFinite(const toml::table& table, std::string_view path,
                    std::string_view name, T* out) {
    return ReadKey(table, path, name, out,
                   [&](const toml::node& n, const std::string& key) {
                     return GetFinite(n, key);
                   });
  }
  Status ReadString(const toml::table& table, std::string_view path,
                    std::string_view name, std::string* out) {
    return ReadKey(table, path, name, out,
                   [&](const toml::node& n, const std::string& key) {
                     return GetString(n, key);
                   });
  }

  // A one-byte string other than a line break.
  StatusOr<char> GetChar(const toml::node& node, std::string_view key) const {
    DTF_ASSIGN_OR_RETURN(const std::string s, GetString(node, key));
    if (s.size() != 1) {
      return Error(node, key,
                   absl::StrFormat("expected one character (one byte), got %s",
                                   QuoteForMessage(s)));
    }
    if (s[0] == '\n' || s[0] == '\r') {
      return Error(node, key, "cannot be a line break");
    }
    return s[0];
  }
  // "int", "float" or "str".
  StatusOr<ValueType> GetType(const toml::node& node,
                              std::string_view key) const {
    DTF_ASSIGN_OR_RETURN(const std::string name, GetString(node, key));
    StatusOr<ValueType> type = ParseValueType(name);
    if (!type.ok()) return Error(node, key, Message(type.status()));
    return *type;
  }
  // A value of `type`; an integer for a float, or an integral float for an
  // int, converts where exact.
  StatusOr<Value> GetValue(const toml::node& node, ValueType type,
                           std::string_view key) const {
    constexpr double kTwo63 = 9223372036854775808.0;
    constexpr int64_t kTwo53 = int64_t{1} << 53;
    if (type == ValueType::kInt) {
      if (const auto* i = node.as_integer()) return Value(i->get());
      if (const auto* f = node.as_floating_point()) {
        const double d = f->get();
        if (d == std::trunc(d) && d >= -kTwo63 && d < kTwo63) {
          return Value(static_cast<int64_t>(d));
        }
      }
    } else if (type == ValueType::kFloat) {
      if (const auto* f = node.as_floating_point()) return Value(f->get());
      if (const auto* i = node.as_integer()) {
        if (i->get() >= -kTwo53 && i->get() <= kTwo53) {
          return Value(static_cast<double>(i->get()));
        }
      }
    } else if (const auto* s = node.as_string()) {
      return Value(s->get());
    }
    return Error(node, key,
                 absl::StrFormat("expected %s, got %s",
                                 ValueTypeWithArticle(type), Text(node)));
  }

 private:
  template <typename T, typename Get>
  Status ReadKey(const toml::table& table, std::string_view path,
                 std::string_view name, T* out, Get get) {
    const toml::node* n = table.get(name);
    if (n == nullptr) return OkStatus();
    const std::string key = absl::StrFormat("%s.%s", path, name);
    Remember(key, *n);
    auto value = get(*n, key);
    if (!value.ok()) return value.status();
    *out = *std::move(value);
    return OkStatus();
  }

  std::string file_;
  std::map<std::string, toml::source_region> where_;
};

}  // namespace dtf::toml_util
