#include "lib/data/job_file.h"

#include <fnmatch.h>
#include <toml++/toml.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"
#include "lib/data/feature_parser.h"
#include "lib/data/schema_check.h"

namespace dtf {
namespace {

using toml_util::KeyPart;
using toml_util::Reader;
using toml_util::ResolvePath;

// "int", "float" or "str".
StatusOr<ValueType> GetType(const Reader& r, const toml::node& node,
                            std::string_view key) {
  DTF_ASSIGN_OR_RETURN(const std::string name, r.GetString(node, key));
  StatusOr<ValueType> type = ParseValueType(name);
  if (!type.ok()) return r.Error(node, key, Message(type.status()));
  return *type;
}

// A value of `type`; an integer for a float, or an integral float for an
// int, converts where exact.
StatusOr<Value> GetValue(const Reader& r, const toml::node& node,
                         ValueType type, std::string_view key) {
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
  return r.Error(
      node, key,
      absl::StrFormat("expected %s, got %s", ValueTypeWithArticle(type),
                      toml_util::Text(node)));
}

Status LoadCsv(const Reader& r, const toml::node& node, const std::string& dir,
               DataSpec* data) {
  auto files =
      [&](const toml::node& n,
          const std::string& key) -> StatusOr<std::vector<std::string>> {
    if (!n.is_array() && !n.is_string()) {
      return r.Error(n, key,
                     absl::StrFormat("expected a list of files, got %s",
                                     toml_util::Describe(n)));
    }
    DTF_ASSIGN_OR_RETURN(std::vector<std::string> paths, r.GetStrings(n, key));
    if (paths.empty()) return r.Error(n, key, "no files listed");
    for (std::string& path : paths) {
      if (path.empty()) return r.Error(n, key, "empty file name");
      path = ResolvePath(dir, path);
    }
    return paths;
  };
  if (const toml::table* splits = node.as_table()) {
    if (splits->empty()) return r.Error(node, "data.csv", "no splits listed");
    for (const auto& [key, value] : toml_util::InFileOrder(*splits)) {
      const std::string name(key->str());
      const std::string path = "data.csv." + KeyPart(name);
      if (name.empty()) return r.Error(key->source(), path, "empty split name");
      DTF_ASSIGN_OR_RETURN(std::vector<std::string> paths, files(*value, path));
      data->csv.push_back(CsvSource{name, std::move(paths)});
    }
    return OkStatus();
  }
  if (!node.is_array() && !node.is_string()) {
    return r.Error(node, "data.csv",
                   absl::StrFormat("expected a list of files or a table of "
                                   "splits ({ train = [...], eval = [...] }), "
                                   "got %s",
                                   toml_util::Describe(node)));
  }
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> paths, files(node, "data.csv"));
  data->csv.push_back(CsvSource{"", std::move(paths)});
  return OkStatus();
}

Status LoadSplit(const Reader& r, const toml::node& node, DataSpec* data) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return r.Error(node, "data.split",
                   absl::StrFormat("expected a table like { train = 0.8, "
                                   "eval = 0.2 }, got %s",
                                   toml_util::Describe(node)));
  }
  if (data->csv.size() != 1 || !data->csv[0].split.empty()) {
    return r.Error(node, "data.split",
                   "needs csv to be one list of files (csv = [...]); a table "
                   "of csv splits is split already");
  }
  if (table->empty()) return r.Error(node, "data.split", "no splits listed");
  double sum = 0;
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string name(key->str());
    const std::string path = "data.split." + KeyPart(name);
    if (name.empty()) return r.Error(key->source(), path, "empty split name");
    DTF_ASSIGN_OR_RETURN(const double fraction, r.GetNumber(*value, path));
    if (!(fraction > 0) || !std::isfinite(fraction)) {
      return r.Error(*value, path,
                     absl::StrFormat("a fraction must be > 0, got %s",
                                     toml_util::Text(*value)));
    }
    sum += fraction;
    data->split.push_back(SplitFraction{name, fraction});
  }
  if (std::abs(sum - 1) > 1e-9) {
    return r.Error(node, "data.split",
                   absl::StrFormat("fractions sum to %.12g, not 1", sum));
  }
  return OkStatus();
}

Status LoadData(const Reader& r, const toml::table& t, const std::string& dir,
                DataSpec* data) {
  DTF_RETURN_IF_ERROR(r.CheckKeys(
      t, "data",
      {"csv", "split", "header", "delimiter", "quote", "trim_spaces", "records",
       "shards", "shard_key", "compression"}));
  if (const toml::node* n = t.get("csv")) {
    DTF_RETURN_IF_ERROR(LoadCsv(r, *n, dir, data));
  }
  if (const toml::node* n = t.get("split")) {
    DTF_RETURN_IF_ERROR(LoadSplit(r, *n, data));
  }
  if (const toml::node* n = t.get("header")) {
    DTF_ASSIGN_OR_RETURN(data->header, r.GetBool(*n, "data.header"));
  }
  if (const toml::node* n = t.get("delimiter")) {
    DTF_ASSIGN_OR_RETURN(data->csv_options.delimiter,
                         r.GetChar(*n, "data.delimiter"));
  }
  if (const toml::node* n = t.get("quote")) {
    DTF_ASSIGN_OR_RETURN(data->csv_options.quote, r.GetChar(*n, "data.quote"));
  }
  if (data->csv_options.quote == data->csv_options.delimiter) {
    const toml::node* n = t.get("quote") ? t.get("quote") : t.get("delimiter");
    return r.Error(*n, n == t.get("quote") ? "data.quote" : "data.delimiter",
                   "the delimiter and the quote must differ");
  }
  if (const toml::node* n = t.get("trim_spaces")) {
    DTF_ASSIGN_OR_RETURN(data->csv_options.trim_spaces,
                         r.GetBool(*n, "data.trim_spaces"));
  }
  if (const toml::node* n = t.get("records")) {
    DTF_ASSIGN_OR_RETURN(const std::string records,
                         r.GetString(*n, "data.records"));
    if (records.empty()) return r.Error(*n, "data.records", "empty path");
    data->records_dir = ResolvePath(dir, records);
  }
  if (const toml::node* n = t.get("shards")) {
    DTF_ASSIGN_OR_RETURN(const int64_t shards, r.GetInt(*n, "data.shards"));
    if (shards < 1 || shards > INT_MAX) {
      return r.Error(*n, "data.shards",
                     absl::StrFormat("must be at least 1, got %d", shards));
    }
    data->shards = static_cast<int>(shards);
  }
  if (const toml::node* n = t.get("shard_key")) {
    DTF_ASSIGN_OR_RETURN(data->shard_key, r.GetString(*n, "data.shard_key"));
  }
  if (const toml::node* n = t.get("compression")) {
    DTF_ASSIGN_OR_RETURN(const std::string name,
                         r.GetString(*n, "data.compression"));
    StatusOr<Compression> c = ParseCompression(name);
    if (!c.ok()) return r.Error(*n, "data.compression", Message(c.status()));
    data->compression = *c;
  }
  return OkStatus();
}

std::string_view StripSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// "name:type" or "name:type=default"; a str default may be wrapped in one
// pair of quotes ('' is the empty string).
StatusOr<ColumnSpec> ParseCompactColumn(const Reader& r, const toml::node& n,
                                        const std::string& text,
                                        const std::string& key) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    return r.Error(n, key,
                   absl::StrFormat("expected \"name:type\" or "
                                   "\"name:type=default\", got %s",
                                   QuoteForMessage(text)));
  }
  const std::string_view rest = std::string_view(text).substr(colon + 1);
  const size_t eq = rest.find('=');
  ColumnSpec column;
  column.name =
      std::string(StripSpaces(std::string_view(text).substr(0, colon)));
  StatusOr<ValueType> type = ParseValueType(StripSpaces(rest.substr(0, eq)));
  if (!type.ok()) return r.Error(n, key, Message(type.status()));
  column.type = *type;
  if (eq != std::string_view::npos) {
    std::string_view value = rest.substr(eq + 1);
    if (column.type != ValueType::kString) {
      value = StripSpaces(value);
    } else if (value.size() >= 2 && value.front() == value.back() &&
               (value.front() == '\'' || value.front() == '"')) {
      value = value.substr(1, value.size() - 2);
    }
    StatusOr<Value> parsed = ParseValue(value, column.type);
    if (!parsed.ok()) {
      return r.Error(n, key + ".default", Message(parsed.status()));
    }
    column.default_value = *std::move(parsed);
  }
  return column;
}

StatusOr<ColumnSpec> LoadColumnTable(Reader& r, const toml::table& t,
                                     const std::string& key) {
  DTF_RETURN_IF_ERROR(r.CheckKeys(
      t, key, {"name", "type", "default", "required", "skip", "format"}));
  ColumnSpec column;
  const toml::node* name = t.get("name");
  if (name == nullptr) return r.Error(t, key + ".name", "missing");
  DTF_ASSIGN_OR_RETURN(column.name, r.GetString(*name, key + ".name"));
  r.Remember(key + ".name", *name);
  const toml::node* type = t.get("type");
  if (type == nullptr) {
    return r.Error(t, key + ".type", "missing (int, float or str)");
  }
  DTF_ASSIGN_OR_RETURN(column.type, GetType(r, *type, key + ".type"));
  if (const toml::node* n = t.get("default")) {
    DTF_ASSIGN_OR_RETURN(column.default_value,
                         GetValue(r, *n, column.type, key + ".default"));
    r.Remember(key + ".default", *n);
  }
  if (const toml::node* n = t.get("required")) {
    DTF_ASSIGN_OR_RETURN(column.required, r.GetBool(*n, key + ".required"));
  }
  if (const toml::node* n = t.get("skip")) {
    DTF_ASSIGN_OR_RETURN(column.skip, r.GetBool(*n, key + ".skip"));
  }
  if (const toml::node* n = t.get("format")) {
    DTF_ASSIGN_OR_RETURN(const std::string name,
                         r.GetString(*n, key + ".format"));
    StatusOr<ColumnFormat> format = ParseColumnFormat(name);
    if (!format.ok())
      return r.Error(*n, key + ".format", Message(format.status()));
    column.format = *format;
    r.Remember(key + ".format", *n);
  }
  return column;
}

Status LoadColumns(Reader& r, const toml::node& node, Schema* schema) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return r.Error(node, "schema.columns",
                   absl::StrFormat("expected an array, got %s",
                                   toml_util::Describe(node)));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const std::string key = absl::StrFormat("schema.columns[%d]", i);
    r.Remember(key, element);
    if (const auto* s = element.as_string()) {
      DTF_ASSIGN_OR_RETURN(ColumnSpec column,
                           ParseCompactColumn(r, element, s->get(), key));
      schema->columns.push_back(std::move(column));
    } else if (const toml::table* t = element.as_table()) {
      DTF_ASSIGN_OR_RETURN(ColumnSpec column, LoadColumnTable(r, *t, key));
      schema->columns.push_back(std::move(column));
    } else {
      return r.Error(
          element, key,
          absl::StrFormat("expected \"name:type\" or a table, got %s",
                          toml_util::Describe(element)));
    }
  }
  return OkStatus();
}

// Names and fnmatch patterns over the schema's columns, in column order per
// pattern. A name without pattern characters stays as written.
StatusOr<std::vector<std::string>> ExpandVectorColumns(const Reader& r,
                                                       const toml::node& node,
                                                       const Schema& schema,
                                                       const std::string& key) {
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> patterns,
                       r.GetStrings(node, key));
  std::vector<std::string> names;
  for (const std::string& pattern : patterns) {
    if (pattern.find_first_of("*?[\\") == std::string::npos) {
      names.push_back(pattern);
      continue;
    }
    const size_t before = names.size();
    for (const ColumnSpec& c : schema.columns) {
      if (fnmatch(pattern.c_str(), c.name.c_str(), 0) == 0) {
        names.push_back(c.name);
      }
    }
    if (names.size() == before) {
      return r.Error(node, key,
                     absl::StrFormat("pattern %s matches no column",
                                     QuoteForMessage(pattern)));
    }
  }
  return names;
}

Status LoadVectors(Reader& r, const toml::node& node, Schema* schema) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return r.Error(node, "schema.vectors",
                   absl::StrFormat("expected an array of tables, got %s",
                                   toml_util::Describe(node)));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const std::string key = absl::StrFormat("schema.vectors[%d]", i);
    r.Remember(key, element);
    const toml::table* t = element.as_table();
    if (t == nullptr) {
      return r.Error(element, key,
                     absl::StrFormat("expected a table, got %s",
                                     toml_util::Describe(element)));
    }
    DTF_RETURN_IF_ERROR(
        r.CheckKeys(*t, key, {"name", "type", "columns", "default"}));
    VectorSpec vector;
    const toml::node* name = t->get("name");
    if (name == nullptr) return r.Error(*t, key + ".name", "missing");
    DTF_ASSIGN_OR_RETURN(vector.name, r.GetString(*name, key + ".name"));
    r.Remember(key + ".name", *name);
    if (const toml::node* n = t->get("type")) {
      DTF_ASSIGN_OR_RETURN(vector.type, GetType(r, *n, key + ".type"));
      r.Remember(key + ".type", *n);
    }
    const toml::node* columns = t->get("columns");
    if (columns == nullptr) return r.Error(*t, key + ".columns", "missing");
    DTF_ASSIGN_OR_RETURN(
        vector.columns,
        ExpandVectorColumns(r, *columns, *schema, key + ".columns"));
    r.Remember(key + ".columns", *columns);
    if (const toml::node* n = t->get("default")) {
      DTF_ASSIGN_OR_RETURN(vector.default_value,
                           GetValue(r, *n, vector.type, key + ".default"));
      r.Remember(key + ".default", *n);
    }
    schema->vectors.push_back(std::move(vector));
  }
  return OkStatus();
}

Status LoadLabel(Reader& r, const toml::node& node, Schema* schema) {
  r.Remember("schema.label", node);
  LabelSpec label;
  if (const auto* s = node.as_string()) {
    label.column = s->get();
    schema->label = std::move(label);
    return OkStatus();
  }
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    return r.Error(node, "schema.label",
                   absl::StrFormat("expected a column name or a table { "
                                   "column = ..., map = { ... } }, got %s",
                                   toml_util::Describe(node)));
  }
  DTF_RETURN_IF_ERROR(r.CheckKeys(*t, "schema.label", {"column", "map"}));
  const toml::node* column = t->get("column");
  if (column == nullptr) return r.Error(*t, "schema.label.column", "missing");
  DTF_ASSIGN_OR_RETURN(label.column,
                       r.GetString(*column, "schema.label.column"));
  r.Remember("schema.label.column", *column);
  if (const toml::node* n = t->get("map")) {
    const toml::table* map = n->as_table();
    if (map == nullptr) {
      return r.Error(*n, "schema.label.map",
                     absl::StrFormat("expected a table of value = integer, "
                                     "got %s",
                                     toml_util::Describe(*n)));
    }
    for (const auto& [key, value] : toml_util::InFileOrder(*map)) {
      const std::string path = "schema.label.map." + KeyPart(key->str());
      DTF_ASSIGN_OR_RETURN(const int64_t id, r.GetInt(*value, path));
      label.mapping.emplace(std::string(key->str()), id);
    }
  }
  schema->label = std::move(label);
  return OkStatus();
}

Status LoadSchemaTable(Reader& r, const toml::table& t, Schema* schema) {
  DTF_RETURN_IF_ERROR(
      r.CheckKeys(t, "schema", {"missing", "label", "columns", "vectors"}));
  r.Remember("schema", t);
  if (const toml::node* n = t.get("missing")) {
    DTF_ASSIGN_OR_RETURN(const std::vector<std::string> tokens,
                         r.GetStrings(*n, "schema.missing"));
    for (const std::string& token : tokens) {
      if (std::find(schema->missing_values.begin(),
                    schema->missing_values.end(),
                    token) == schema->missing_values.end()) {
        schema->missing_values.push_back(token);
      }
    }
  }
  if (const toml::node* n = t.get("columns")) {
    DTF_RETURN_IF_ERROR(LoadColumns(r, *n, schema));
  }
  if (const toml::node* n = t.get("vectors")) {
    DTF_RETURN_IF_ERROR(LoadVectors(r, *n, schema));
  }
  if (const toml::node* n = t.get("label")) {
    DTF_RETURN_IF_ERROR(LoadLabel(r, *n, schema));
  }
  if (std::optional<SchemaProblem> problem = FindSchemaProblem(*schema)) {
    return r.Error(r.Where(problem->key), problem->key, problem->message);
  }
  return OkStatus();
}

// The table at `name` in `root`, or nullptr when absent.
StatusOr<const toml::table*> TopTable(const Reader& r, const toml::table& root,
                                      std::string_view name) {
  const toml::node* n = root.get(name);
  if (n == nullptr) return nullptr;
  if (const toml::table* t = n->as_table()) return t;
  return r.Error(*n, name,
                 absl::StrFormat("expected a table ([%s]), got %s", name,
                                 toml_util::Describe(*n)));
}

}  // namespace

namespace {

Status ApplyOverride(const std::string& text, toml::table* root) {
  const size_t eq = text.find('=');
  const std::string key = eq == std::string::npos ? "" : text.substr(0, eq);
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("--set ", text, ": ", why));
  };
  if (key.empty() || key.front() == '.' || key.back() == '.' ||
      key.find("..") != std::string::npos) {
    return bad("expected section.key=value");
  }
  std::vector<std::string> parts;
  for (size_t at = 0; at <= key.size();) {
    const size_t dot = std::min(key.find('.', at), key.size());
    parts.push_back(key.substr(at, dot - at));
    at = dot + 1;
  }
  const std::string value = text.substr(eq + 1);
  std::optional<toml::table> parsed;
  if (StatusOr<toml::table> r =
          toml_util::ParseText(StrCat("v = ", value), "--set");
      r.ok()) {
    parsed = *std::move(r);
  }
  toml::table* table = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* next = table->get(parts[i]);
    if (next == nullptr) {
      table->insert(parts[i], toml::table{});
      next = table->get(parts[i]);
    }
    if (!next->is_table()) {
      return bad(StrCat("\"", parts[i], "\" is not a table"));
    }
    table = next->as_table();
  }
  if (parsed && parsed->get("v") != nullptr) {
    table->insert_or_assign(parts.back(), *parsed->get("v"));
  } else {
    table->insert_or_assign(parts.back(), value);
  }
  // train.steps and train.epochs say one thing, how long to train: a set of
  // one replaces the file's other (as dtf train --steps does).
  if (parts.size() == 2 && parts[0] == "train" &&
      (parts[1] == "steps" || parts[1] == "epochs")) {
    table->erase(parts[1] == "steps" ? "epochs" : "steps");
  }
  return OkStatus();
}

// The job in a parsed job file's tables.
StatusOr<JobFile> LoadJobTable(toml::table root, const std::string& path,
                               const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) {
    DTF_RETURN_IF_ERROR(ApplyOverride(o, &root));
  }
  Reader r(path);
  DTF_RETURN_IF_ERROR(
      r.CheckKeys(root, "", {"data", "schema", "features", "model", "train"}));
  JobFile job;
  job.path = path;
  job.dir =
      std::filesystem::path(path).parent_path().lexically_normal().string();
  if (job.dir.empty()) job.dir = ".";
  job.data.records_dir = ResolvePath(job.dir, "records");
  DTF_ASSIGN_OR_RETURN(const toml::table* data, TopTable(r, root, "data"));
  if (data != nullptr) {
    DTF_RETURN_IF_ERROR(LoadData(r, *data, job.dir, &job.data));
  }
  DTF_ASSIGN_OR_RETURN(const toml::table* schema, TopTable(r, root, "schema"));
  if (schema != nullptr) {
    DTF_RETURN_IF_ERROR(LoadSchemaTable(r, *schema, &job.schema));
  }
  // Without a header the schema lists every CSV column, so the key must be
  // one of them.
  if (!job.data.header && !job.data.shard_key.empty() &&
      !job.schema.columns.empty() &&
      job.schema.FindColumn(job.data.shard_key) == nullptr) {
    return r.Error(*data->get("shard_key"), "data.shard_key",
                   absl::StrFormat("unknown column %s",
                                   QuoteForMessage(job.data.shard_key)));
  }
  DTF_ASSIGN_OR_RETURN(const toml::table* features,
                       TopTable(r, root, "features"));
  if (features != nullptr) {
    DTF_RETURN_IF_ERROR(ParseFeatureSpec(r, toml_util::Table{*features},
                                         job.schema, job.dir, &job.features));
  }
  DTF_ASSIGN_OR_RETURN(const toml::table* model, TopTable(r, root, "model"));
  if (model != nullptr) {
    DTF_RETURN_IF_ERROR(ParseModelSpec(r, toml_util::Table{*model},
                                       job.features, job.schema,
                                       &job.model.emplace()));
  }
  DTF_ASSIGN_OR_RETURN(const toml::table* train, TopTable(r, root, "train"));
  std::optional<toml_util::Table> train_table;
  if (train != nullptr) train_table.emplace(toml_util::Table{*train});
  DTF_RETURN_IF_ERROR(ParseTrainSpec(r, train_table ? &*train_table : nullptr,
                                     job.model ? &*job.model : nullptr, job.dir,
                                     &job.train));
  return job;
}

}  // namespace

StatusOr<JobFile> LoadJobFile(const std::string& path) {
  return LoadJobFile(path, {});
}

StatusOr<JobFile> LoadJobFile(const std::string& path,
                              const std::vector<std::string>& overrides) {
  DTF_ASSIGN_OR_RETURN(toml::table root, toml_util::ParseFile(path));
  return LoadJobTable(std::move(root), path, overrides);
}

StatusOr<JobFile> ParseJobFile(std::string_view text, const std::string& path,
                               const std::vector<std::string>& overrides) {
  DTF_ASSIGN_OR_RETURN(toml::table root, toml_util::ParseText(text, path));
  return LoadJobTable(std::move(root), path, overrides);
}

StatusOr<Schema> LoadSchemaFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const toml::table root, toml_util::ParseFile(path));
  Reader r(path);
  DTF_ASSIGN_OR_RETURN(const toml::table* table, TopTable(r, root, "schema"));
  if (table == nullptr) {
    return r.Error(toml::source_region{}, "schema", "no [schema] table");
  }
  Schema schema;
  DTF_RETURN_IF_ERROR(LoadSchemaTable(r, *table, &schema));
  return schema;
}

}  // namespace dtf
