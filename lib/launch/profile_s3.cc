#include "lib/launch/profile_s3.h"

#include <toml++/toml.h>

#include <algorithm>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"

namespace dtf::launch {
namespace {

std::string S3Where(const toml_util::Reader& reader, const toml::node& node) {
  const toml::source_position& p = node.source().begin;
  return StrCat(reader.file(), ":", std::max<uint32_t>(p.line, 1), ":",
                std::max<uint32_t>(p.column, 1));
}

// A non-empty string without whitespace or control characters: a URL, a
// region or a profile name.
StatusOr<std::string> S3Word(const toml_util::Reader& reader,
                             const toml::node& node, std::string_view key) {
  DTF_ASSIGN_OR_RETURN(std::string s, reader.GetString(node, key));
  if (s.empty()) return reader.Error(node, key, "must not be empty");
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return reader.Error(node, key,
                          "must not hold spaces or control characters");
    }
  }
  return s;
}

}  // namespace

Status ReadS3Table(const toml_util::Reader& reader,
                   const toml_util::Table& profile, ProfileS3* s3,
                   std::map<std::string, std::string>* where) {
  const toml::node* node = profile.table.get("s3");
  if (node == nullptr) return OkStatus();
  (*where)["s3"] = S3Where(reader, *node);
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return reader.Error(
        *node, "s3",
        StrCat("expected a table, got ", toml_util::Describe(*node)));
  }
  DTF_RETURN_IF_ERROR(reader.CheckKnownKeys(
      *table, "s3",
      {"endpoint", "region", "profile", "path_style", "credentials"}));
  s3->present = true;
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string_view name = key->str();
    const std::string path = StrCat("s3.", name);
    (*where)[path] = S3Where(reader, *value);
    if (name == "path_style") {
      DTF_ASSIGN_OR_RETURN(s3->path_style, reader.GetBool(*value, path));
    } else if (name == "credentials") {
      DTF_ASSIGN_OR_RETURN(
          const int choice,
          reader.GetChoice(*value, path, {"launcher", "tasks"}));
      s3->pass_credentials = choice == 0;
    } else {
      DTF_ASSIGN_OR_RETURN(std::string s, S3Word(reader, *value, path));
      if (name == "endpoint") {
        if (!s.starts_with("http://") && !s.starts_with("https://")) {
          return reader.Error(*value, path,
                              StrCat("expected an http:// or https:// URL, "
                                     "got ",
                                     toml_util::Text(*value)));
        }
        s3->endpoint = std::move(s);
      } else if (name == "region") {
        s3->region = std::move(s);
      } else {
        s3->profile = std::move(s);
      }
    }
  }
  return OkStatus();
}

}  // namespace dtf::launch
