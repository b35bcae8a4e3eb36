// Reading TOML documents with toml++ and reporting errors as
// "<file>:<line>:<col>: <key>: what is wrong". Include it only from the .cc
// files that parse TOML: it brings in <toml++/toml.h>. Headers that name a
// Reader or a Table forward-declare them. Writing TOML text is in
// toml_text.h.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace dtf::toml_util {

// "a string", "an integer", ...: what a node holds, for messages.
std::string_view Describe(const toml::node& node);

// A scalar's value as a message shows it ("x" quoted, 1.5, true); otherwise
// Describe().
std::string Text(const toml::node& node);

// The Levenshtein distance between `a` and `b`.
size_t EditDistance(std::string_view a, std::string_view b);

// "a, b, c".
std::string Join(std::initializer_list<std::string_view> names);

// The entry of `allowed` closest to `name` (edit distance under 3 and under
// name's length), or "" when none is.
std::string_view Closest(std::string_view name,
                         std::initializer_list<std::string_view> allowed);

// The document in `text`, which `source` names; a syntax error, or text
// over the limits of toml_limits.h (checked first), is InvalidArgument
// "<source>:<line>:<col>: what is wrong". Every TOML read goes through here.
StatusOr<toml::table> ParseText(std::string_view text,
                                const std::string& source);

// The document at `path`, read and parsed as ParseText does; a file over
// kMaxTomlBytes is refused before it is read whole.
StatusOr<toml::table> ParseFile(const std::string& path);

// The entries of `table` in the order they appear in the file.
std::vector<std::pair<const toml::key*, const toml::node*>> InFileOrder(
    const toml::table& table);

// `path` as written in a file in `dir`: an absolute path normalized, a
// relative one joined to `dir`; "-" (standard input) and s3:// URLs as is.
std::string ResolvePath(const std::string& dir, const std::string& path);

// A TOML table as the job file's parsers (feature_parser.h,
// model_options.h, train_options.h) take it, so that their public headers
// forward-declare this instead of including toml++.
struct Table {
  const toml::table& table;
};

// Reads values out of one TOML file, remembering where each key was so that
// later checks can point at it. Every error is InvalidArgument
// "<file>:<line>:<col>: <key>: what is wrong". Not thread-safe.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  Status Error(const toml::source_region& where, std::string_view key,
               std::string_view what) const;
  Status Error(const toml::node& node, std::string_view key,
               std::string_view what) const {
    return Error(node.source(), key, what);
  }

  void Remember(const std::string& key, const toml::node& node) {
    where_[key] = node.source();
  }
  // Where `key` or, failing that, its nearest remembered parent was.
  toml::source_region Where(std::string key) const;

  // An error naming the first key of `table` (in file order) that is not in
  // `allowed`, with the closest allowed key as a suggestion. An empty `path`
  // means the document's top level, whose keys are tables.
  Status CheckKeys(const toml::table& table, std::string_view path,
                   std::initializer_list<std::string_view> allowed) const;
  // As CheckKeys, a key always "key": the first key of `table` not in
  // `allowed` is refused with what `foreign` says of it when it says
  // something (a key that belongs to another kind of file or table), else
  // as unknown, with the closest allowed key as a suggestion. `path`
  // prefixes the key in the error ("" at the top level).
  Status CheckKnownKeys(const toml::table& table, std::string_view path,
                        std::initializer_list<std::string_view> allowed,
                        const std::function<std::string(std::string_view)>&
                            foreign = nullptr) const;

  StatusOr<std::string> GetString(const toml::node& node,
                                  std::string_view key) const;
  StatusOr<bool> GetBool(const toml::node& node, std::string_view key) const;
  StatusOr<int64_t> GetInt(const toml::node& node, std::string_view key) const;
  // A float, or an integer read as one.
  StatusOr<double> GetNumber(const toml::node& node,
                             std::string_view key) const;
  // A string or an array of strings, as a list.
  StatusOr<std::vector<std::string>> GetStrings(const toml::node& node,
                                                std::string_view key) const;
  // An integer >= `min`.
  StatusOr<int64_t> GetIntAtLeast(const toml::node& node, std::string_view key,
                                  int64_t min) const;
  // An integer from `min` to `max`; over `max` is "must be at most <max>
  // (dtf's limit), got <value>".
  StatusOr<int64_t> GetIntInRange(const toml::node& node, std::string_view key,
                                  int64_t min, int64_t max) const;
  // A finite number.
  StatusOr<double> GetFinite(const toml::node& node,
                             std::string_view key) const;
  // The index in `choices` of the string at `node`; an error lists the
  // choices and suggests the closest.
  StatusOr<int> GetChoice(
      const toml::node& node, std::string_view key,
      std::initializer_list<std::string_view> choices) const;
  // A one-byte string other than a line break.
  StatusOr<char> GetChar(const toml::node& node, std::string_view key) const;

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
  Status ReadIntInRange(const toml::table& table, std::string_view path,
                        std::string_view name, int64_t min, int64_t max,
                        int64_t* out) {
    return ReadKey(table, path, name, out,
                   [&](const toml::node& n, const std::string& key) {
                     return GetIntInRange(n, key, min, max);
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

 private:
  // The node of `name` in `table`, remembered as "<path>.<name>" (into
  // *key), or null when absent.
  const toml::node* Find(const toml::table& table, std::string_view path,
                         std::string_view name, std::string* key);

  template <typename T, typename Get>
  Status ReadKey(const toml::table& table, std::string_view path,
                 std::string_view name, T* out, Get get) {
    std::string key;
    const toml::node* n = Find(table, path, name, &key);
    if (n == nullptr) return OkStatus();
    auto value = get(*n, key);
    if (!value.ok()) return value.status();
    *out = *std::move(value);
    return OkStatus();
  }

  std::string file_;
  std::map<std::string, toml::source_region> where_;
};

}  // namespace dtf::toml_util
