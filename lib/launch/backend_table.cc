#include "lib/launch/backend_table.h"

#include <algorithm>

#include "lib/base/strings.h"

namespace dtf::launch {

std::string WhereOf(const toml_util::Reader& reader, const toml::node& node) {
  const toml::source_position& p = node.source().begin;
  return StrCat(reader.file(), ":", std::max<uint32_t>(p.line, 1), ":",
                std::max<uint32_t>(p.column, 1));
}

StatusOr<std::string> ReadOneLine(const toml_util::Reader& reader,
                                  const toml::node& node,
                                  std::string_view key) {
  DTF_ASSIGN_OR_RETURN(std::string s, reader.GetString(node, key));
  if (s.empty()) return reader.Error(node, key, "must not be empty");
  if (s.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
    return reader.Error(node, key, "must not hold a line break");
  }
  return s;
}

StatusOr<const toml::table*> BackendTable(
    const toml_util::Reader& reader, const toml_util::Table& profile,
    std::string_view name, std::initializer_list<std::string_view> known) {
  const toml::node* node = profile.table.get(name);
  if (node == nullptr) return nullptr;
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return reader.Error(
        *node, name,
        StrCat("expected a table, got ", toml_util::Describe(*node)));
  }
  DTF_RETURN_IF_ERROR(reader.CheckKnownKeys(*table, name, known));
  return table;
}

}  // namespace dtf::launch
