#include "lib/base/toml_util.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "lib/base/bounded_read.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/base/toml_limits.h"
#include "lib/base/toml_text.h"

namespace dtf::toml_util {

std::string_view Describe(const toml::node& node) {
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

std::string Text(const toml::node& node) {
  if (const auto* s = node.as_string()) return QuoteForMessage(s->get());
  if (const auto* i = node.as_integer()) return StrCat(i->get());
  if (const auto* f = node.as_floating_point()) return FormatDouble(f->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::string(Describe(node));
}

size_t EditDistance(std::string_view a, std::string_view b) {
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

std::string Join(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string_view Closest(std::string_view name,
                         std::initializer_list<std::string_view> allowed) {
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

StatusOr<toml::table> ParseText(std::string_view text,
                                const std::string& source) {
  auto error = [&](std::string_view description,
                   const toml::source_region& where) {
    return InvalidArgumentError(StrCat(source, ":", where.begin.line, ":",
                                       where.begin.column, ": ", description));
  };
  DTF_RETURN_IF_ERROR(CheckTomlLimits(text, source));
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return error(e.description(), e.source());
  }
#else
  toml::parse_result result = toml::parse(text, source);
  if (!result) {
    return error(result.error().description(), result.error().source());
  }
  return std::move(result).table();
#endif
}

StatusOr<toml::table> ParseFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text,
                       ReadFileToStringAtMost(path, kMaxTomlBytes));
  return ParseText(text, path);
}

std::vector<std::pair<const toml::key*, const toml::node*>> InFileOrder(
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

std::string ResolvePath(const std::string& dir, const std::string& path) {
  // "-" (standard input) and object store URLs ("s3://...") stay as given.
  if (path == "-" || path.starts_with("s3://")) return path;
  const std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (std::filesystem::path(dir) / p).lexically_normal().string();
}

Status Reader::Error(const toml::source_region& where, std::string_view key,
                     std::string_view what) const {
  return InvalidArgumentError(
      StrCat(file_, ":", std::max<uint32_t>(where.begin.line, 1), ":",
             std::max<uint32_t>(where.begin.column, 1), ": ", key, ": ", what));
}

toml::source_region Reader::Where(std::string key) const {
  for (;;) {
    if (auto it = where_.find(key); it != where_.end()) return it->second;
    const size_t cut = key.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return {};
    key.resize(cut);
  }
}

Status Reader::CheckKeys(
    const toml::table& table, std::string_view path,
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
            ? StrCat("unknown ", noun, " (expected one of ", Join(allowed), ")")
            : StrCat("unknown ", noun, " (did you mean ", best, "?)");
    return Error(
        key->source(),
        path.empty() ? KeyPart(name) : StrCat(path, ".", KeyPart(name)), what);
  }
  return OkStatus();
}

Status Reader::CheckKnownKeys(
    const toml::table& table, std::string_view path,
    std::initializer_list<std::string_view> allowed,
    const std::function<std::string(std::string_view)>& foreign) const {
  for (const auto& [key, node] : InFileOrder(table)) {
    const std::string_view name = key->str();
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) {
      continue;
    }
    std::string what = foreign ? foreign(name) : std::string();
    if (what.empty()) {
      const std::string_view best = Closest(name, allowed);
      what = best.empty()
                 ? StrCat("unknown key (expected one of ", Join(allowed), ")")
                 : StrCat("unknown key (did you mean ", best, "?)");
    }
    return Error(
        key->source(),
        path.empty() ? KeyPart(name) : StrCat(path, ".", KeyPart(name)), what);
  }
  return OkStatus();
}

StatusOr<std::string> Reader::GetString(const toml::node& node,
                                        std::string_view key) const {
  if (const auto* s = node.as_string()) return s->get();
  return Error(node, key, StrCat("expected a string, got ", Describe(node)));
}

StatusOr<bool> Reader::GetBool(const toml::node& node,
                               std::string_view key) const {
  if (const auto* b = node.as_boolean()) return b->get();
  return Error(node, key, StrCat("expected true or false, got ", Text(node)));
}

StatusOr<int64_t> Reader::GetInt(const toml::node& node,
                                 std::string_view key) const {
  if (const auto* i = node.as_integer()) return i->get();
  return Error(node, key, StrCat("expected an integer, got ", Text(node)));
}

StatusOr<double> Reader::GetNumber(const toml::node& node,
                                   std::string_view key) const {
  if (const auto* f = node.as_floating_point()) return f->get();
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  return Error(node, key, StrCat("expected a number, got ", Text(node)));
}

StatusOr<std::vector<std::string>> Reader::GetStrings(
    const toml::node& node, std::string_view key) const {
  if (const auto* s = node.as_string()) return std::vector{s->get()};
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return Error(node, key,
                 StrCat("expected a list of strings, got ", Describe(node)));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < array->size(); ++i) {
    DTF_ASSIGN_OR_RETURN(std::string s,
                         GetString(*array->get(i), StrCat(key, "[", i, "]")));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<int64_t> Reader::GetIntAtLeast(const toml::node& node,
                                        std::string_view key,
                                        int64_t min) const {
  DTF_ASSIGN_OR_RETURN(const int64_t value, GetInt(node, key));
  if (value < min) {
    return Error(node, key, StrCat("must be at least ", min, ", got ", value));
  }
  return value;
}

StatusOr<int64_t> Reader::GetIntInRange(const toml::node& node,
                                        std::string_view key, int64_t min,
                                        int64_t max) const {
  DTF_ASSIGN_OR_RETURN(const int64_t value, GetIntAtLeast(node, key, min));
  if (value > max) {
    return Error(
        node, key,
        StrCat("must be at most ", max, " (dtf's limit), got ", value));
  }
  return value;
}

StatusOr<double> Reader::GetFinite(const toml::node& node,
                                   std::string_view key) const {
  DTF_ASSIGN_OR_RETURN(const double value, GetNumber(node, key));
  if (!std::isfinite(value)) {
    return Error(node, key, StrCat("must be finite, got ", Text(node)));
  }
  return value;
}

StatusOr<int> Reader::GetChoice(
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
               best.empty() ? StrCat("expected one of ", Join(choices),
                                     ", got ", QuoteForMessage(name))
                            : StrCat("unknown value ", QuoteForMessage(name),
                                     " (did you mean ", best, "?)"));
}

StatusOr<char> Reader::GetChar(const toml::node& node,
                               std::string_view key) const {
  DTF_ASSIGN_OR_RETURN(const std::string s, GetString(node, key));
  if (s.size() != 1) {
    return Error(
        node, key,
        StrCat("expected one character (one byte), got ", QuoteForMessage(s)));
  }
  if (s[0] == '\n' || s[0] == '\r') {
    return Error(node, key, "cannot be a line break");
  }
  return s[0];
}

const toml::node* Reader::Find(const toml::table& table, std::string_view path,
                               std::string_view name, std::string* key) {
  const toml::node* n = table.get(name);
  if (n == nullptr) return nullptr;
  *key = StrCat(path, ".", name);
  Remember(*key, *n);
  return n;
}

}  // namespace dtf::toml_util
