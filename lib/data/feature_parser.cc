#include "lib/data/feature_parser.h"

#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_format.h"
#include "lib/base/bounded_read.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/base/toml_util.h"
#include "lib/data/feature_checks.h"
#include "lib/data/job_limits.h"

namespace dtf {

namespace {

using toml_util::Reader;

// Parses the kinds in FeatureKind order, so that a bucketized feature's
// source and a crossed feature's inputs resolve against the features read
// before them.
class FeatureParser {
 public:
  FeatureParser(Reader& r, const Schema& schema, const std::string& dir,
                FeatureSpec* spec)
      : r_(r), schema_(schema), dir_(dir), spec_(spec) {}

  Status Parse(const toml::table& features) {
    DTF_RETURN_IF_ERROR(
        r_.CheckKeys(features, "features",
                     {"numeric", "categorical", "hashed", "bucketized",
                      "crossed", "date", "text"}));
    for (int k = 0; k < kNumFeatureKinds; ++k) {
      const FeatureKind kind = static_cast<FeatureKind>(k);
      const toml::node* node = features.get(FeatureKindName(kind));
      if (node == nullptr) continue;
      const std::string key = StrCat("features.", FeatureKindName(kind));
      const toml::array* array = node->as_array();
      if (array == nullptr) {
        return r_.Error(*node, key,
                        StrCat("expected an array of tables ([[", key,
                               "]]), got ", toml_util::Describe(*node)));
      }
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& element = *array->get(i);
        const std::string element_key = FeatureKey(kind, i);
        const toml::table* t = element.as_table();
        if (t == nullptr) {
          return r_.Error(
              element, element_key,
              StrCat("expected a table, got ", toml_util::Describe(element)));
        }
        r_.Remember(element_key, element);
        DTF_RETURN_IF_ERROR(ParseOne(kind, *t, element_key));
      }
    }
    DTF_RETURN_IF_ERROR(CheckDatePartNames(r_, *spec_));
    return CheckEveryFeatureFeeds(r_, *spec_, used_);
  }

 private:
  Status ParseOne(FeatureKind kind, const toml::table& t,
                  const std::string& key) {
    if (kind == FeatureKind::kNumeric) {
      DTF_RETURN_IF_ERROR(r_.CheckKeys(
          t, key, {"name", "source", "normalize", "default", "deep", "wide"}));
      return ParseNumeric(t, key);
    }
    if (const toml::node* n = t.get("deep")) {
      return r_.Error(*n, key + ".deep",
                      "unknown key: a categorical feature feeds the deep part "
                      "through its embedding (embedding = N)");
    }
    switch (kind) {
      case FeatureKind::kCategorical:
        DTF_RETURN_IF_ERROR(
            r_.CheckKeys(t, key,
                         {"name", "source", "vocabulary", "vocabulary_file",
                          "num_oov_buckets", "embedding", "combiner", "wide"}));
        return ParseCategorical(t, key);
      case FeatureKind::kHashed:
        DTF_RETURN_IF_ERROR(r_.CheckKeys(
            t, key,
            {"name", "source", "buckets", "embedding", "combiner", "wide"}));
        return ParseHashed(t, key);
      case FeatureKind::kBucketized:
        DTF_RETURN_IF_ERROR(r_.CheckKeys(
            t, key,
            {"name", "source", "boundaries", "embedding", "combiner", "wide"}));
        return ParseBucketized(t, key);
      case FeatureKind::kDate:
        DTF_RETURN_IF_ERROR(r_.CheckKeys(t, key,
                                         {"name", "source", "format", "parts",
                                          "default", "embedding", "wide"}));
        return ParseDate(t, key);
      case FeatureKind::kText:
        DTF_RETURN_IF_ERROR(r_.CheckKeys(t, key,
                                         {"name", "source", "buckets", "ngrams",
                                          "embedding", "combiner", "wide"}));
        return ParseText(t, key);
      default:
        DTF_RETURN_IF_ERROR(r_.CheckKeys(
            t, key,
            {"name", "columns", "buckets", "embedding", "combiner", "wide"}));
        return ParseCrossed(t, key);
    }
  }

  // Reads `name` (required, unique) and, unless `source` is null, `source`
  // (default: the name).
  Status ReadNames(const toml::table& t, const std::string& key,
                   std::string* name, std::string* source) {
    const toml::node* n = t.get("name");
    if (n == nullptr) return r_.Error(t, key + ".name", "missing");
    DTF_ASSIGN_OR_RETURN(*name, r_.GetString(*n, key + ".name"));
    r_.Remember(key + ".name", *n);
    if (name->empty()) return r_.Error(*n, key + ".name", "empty name");
    const auto [it, inserted] = names_.emplace(*name, key);
    if (!inserted) {
      return r_.Error(*n, key + ".name",
                      absl::StrFormat("duplicate feature name %s (%s, line %d)",
                                      QuoteForMessage(*name), it->second,
                                      r_.Where(it->second).begin.line));
    }
    if (source == nullptr) return OkStatus();
    *source = *name;
    return r_.ReadString(t, key, "source", source);
  }

  // Where a source error points: at `source`, or at `name` when absent.
  static toml::source_region SourceAt(const toml::table& t) {
    return (t.get("source") ? t.get("source") : t.get("name"))->source();
  }

  // The written scalar column `name` for the input at `key`, written at
  // `where`, of one of `types`; `what` says what the feature takes.
  StatusOr<const ColumnSpec*> Column(const toml::source_region& where,
                                     const std::string& key,
                                     const std::string& name,
                                     std::initializer_list<ValueType> types,
                                     std::string_view what) const {
    const std::string quoted = QuoteForMessage(name);
    auto error = [&](std::string_view message) {
      return r_.Error(where, key, message);
    };
    const ColumnSpec* column = schema_.FindColumn(name);
    if (column == nullptr) {
      for (const VectorSpec& v : schema_.vectors) {
        if (v.name == name) {
          return error(
              StrCat(quoted, " is a vector; this feature takes ", what));
        }
      }
      std::string hint;
      for (const ColumnSpec& c : schema_.columns) {
        if (hint.empty() && toml_util::EditDistance(c.name, name) < 3) {
          hint = StrCat(" (did you mean ", QuoteForMessage(c.name), "?)");
        }
      }
      return error(StrCat("no column ", quoted, " in [schema]", hint));
    }
    if (column->skip) {
      return error(StrCat("column ", quoted,
                          " is skipped (skip = true), so the records lack it"));
    }
    for (const VectorSpec& v : schema_.vectors) {
      if (std::find(v.columns.begin(), v.columns.end(), name) !=
          v.columns.end()) {
        return error(StrCat("column ", quoted,
                            " is written only as part of the vector ",
                            QuoteForMessage(v.name)));
      }
    }
    if (schema_.label && schema_.label->column == name) {
      return error(StrCat("column ", quoted, " is the label"));
    }
    if (std::find(types.begin(), types.end(), column->type) == types.end()) {
      return error(StrCat("column ", quoted, " is ",
                          ValueTypeWithArticle(column->type),
                          "; this feature takes ", what));
    }
    return column;
  }

  Status ReadUse(const toml::table& t, const std::string& key,
                 CategoricalUse* use) {
    DTF_RETURN_IF_ERROR(r_.ReadIntInRange(t, key, "embedding", 0, kMaxEmbedding,
                                          &use->embedding));
    use->wide = use->embedding == 0;
    DTF_RETURN_IF_ERROR(r_.ReadBool(t, key, "wide", &use->wide));
    if (const toml::node* n = t.get("combiner")) {
      DTF_ASSIGN_OR_RETURN(
          const int c, r_.GetChoice(*n, key + ".combiner", {"sum", "mean"}));
      use->combiner = c == 0 ? Combiner::kSum : Combiner::kMean;
      if (use->embedding == 0) {
        return r_.Error(*n, key + ".combiner",
                        "only with an embedding (embedding > 0)");
      }
    }
    return OkStatus();
  }

  Status ParseNumeric(const toml::table& t, const std::string& key) {
    NumericFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    const auto vector =
        std::find_if(schema_.vectors.begin(), schema_.vectors.end(),
                     [&](const VectorSpec& v) { return v.name == f.source; });
    if (vector != schema_.vectors.end()) {
      f.source_kind = InputKind::kVector;
      f.source_type = vector->type;
      f.dimension = static_cast<int64_t>(vector->columns.size());
    } else {
      DTF_ASSIGN_OR_RETURN(const ColumnSpec* column,
                           Column(SourceAt(t), key + ".source", f.source,
                                  {ValueType::kInt, ValueType::kFloat},
                                  "an int or float column, or a vector"));
      f.source_type = column->type;
    }
    DTF_RETURN_IF_ERROR(r_.ReadBool(t, key, "normalize", &f.normalize));
    DTF_RETURN_IF_ERROR(r_.ReadFinite(t, key, "default", &f.default_value));
    DTF_RETURN_IF_ERROR(r_.ReadBool(t, key, "deep", &f.deep));
    DTF_RETURN_IF_ERROR(r_.ReadBool(t, key, "wide", &f.wide));
    spec_->numeric.push_back(std::move(f));
    return OkStatus();
  }

  // Adds one vocabulary entry, `text` or the integer at `n`, in canonical
  // form; `where` prefixes messages about a file's line. `*index` maps the
  // entries so far to their positions.
  Status AddEntry(const toml::node& n, const std::string& key,
                  std::string_view where, const std::string& text,
                  std::unordered_map<std::string, size_t>* index,
                  CategoricalFeature* f) const {
    if (static_cast<int64_t>(f->vocabulary.size()) >= kMaxVocabulary) {
      return r_.Error(n, key,
                      StrCat(where, "more than ", kMaxVocabulary,
                             " vocabulary entries (dtf's limit)"));
    }
    std::string value = text;
    if (f->source_type == ValueType::kInt) {
      if (const auto* i = n.as_integer()) {
        value = StrCat(i->get());
      } else {
        StatusOr<Value> v = ParseValue(text, ValueType::kInt);
        if (!v.ok())
          return r_.Error(n, key, StrCat(where, Message(v.status())));
        value = StrCat(std::get<int64_t>(*v));
      }
    }
    const auto [it, added] = index->emplace(value, f->vocabulary.size());
    if (!added) {
      return r_.Error(n, key,
                      StrCat(where, QuoteForMessage(value),
                             " is listed twice (entry ", it->second + 1, ")"));
    }
    f->vocabulary.push_back(std::move(value));
    return OkStatus();
  }

  Status ReadVocabularyFile(const toml::node& n, const std::string& key,
                            CategoricalFeature* f) {
    DTF_ASSIGN_OR_RETURN(const std::string name, r_.GetString(n, key));
    if (name.empty()) return r_.Error(n, key, "empty path");
    f->vocabulary_file = toml_util::ResolvePath(dir_, name);
    StatusOr<std::string> text =
        ReadWholeFile(f->vocabulary_file, kMaxVocabularyFileBytes);
    if (!text.ok()) return r_.Error(n, key, Message(text.status()));
    std::string_view rest = *text;
    std::unordered_map<std::string, size_t> index;
    for (size_t line = 1; !rest.empty(); ++line) {
      const size_t end = std::min(rest.find('\n'), rest.size());
      std::string_view entry = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));
      if (!entry.empty() && entry.back() == '\r') entry.remove_suffix(1);
      const std::string where = StrCat(f->vocabulary_file, ":", line, ": ");
      if (entry.empty()) {
        return r_.Error(n, key,
                        StrCat(where,
                               "empty line (list an empty string "
                               "inline instead)"));
      }
      DTF_RETURN_IF_ERROR(
          AddEntry(n, key, where, std::string(entry), &index, f));
    }
    if (f->vocabulary.empty()) {
      return r_.Error(n, key, StrCat(f->vocabulary_file, ": empty vocabulary"));
    }
    return OkStatus();
  }

  Status ParseCategorical(const toml::table& t, const std::string& key) {
    CategoricalFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    DTF_ASSIGN_OR_RETURN(
        const ColumnSpec* column,
        Column(SourceAt(t), key + ".source", f.source,
               {ValueType::kString, ValueType::kInt}, "a str or int column"));
    f.source_type = column->type;
    const toml::node* list = t.get("vocabulary");
    const toml::node* file = t.get("vocabulary_file");
    const std::string list_key = key + ".vocabulary";
    if (list != nullptr && file != nullptr) {
      return r_.Error(*file, key + ".vocabulary_file",
                      "give vocabulary or vocabulary_file, not both");
    }
    if (file != nullptr) {
      DTF_RETURN_IF_ERROR(
          ReadVocabularyFile(*file, key + ".vocabulary_file", &f));
    } else if (list == nullptr) {
      return r_.Error(t, list_key, "missing (a list, or vocabulary_file)");
    } else if (!list->is_array() || list->as_array()->empty()) {
      return r_.Error(
          *list, list_key,
          StrCat("expected a non-empty list, got ", toml_util::Text(*list)));
    } else {
      const toml::array& array = *list->as_array();
      std::unordered_map<std::string, size_t> index;
      for (size_t i = 0; i < array.size(); ++i) {
        const std::string element_key = StrCat(list_key, "[", i, "]");
        const toml::node& element = *array.get(i);
        std::string text;
        if (f.source_type == ValueType::kString || !element.is_integer()) {
          DTF_ASSIGN_OR_RETURN(text, r_.GetString(element, element_key));
        }
        DTF_RETURN_IF_ERROR(
            AddEntry(element, element_key, "", text, &index, &f));
      }
    }
    DTF_RETURN_IF_ERROR(r_.ReadIntInRange(t, key, "num_oov_buckets", 0,
                                          kMaxBuckets, &f.num_oov_buckets));
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->categorical.push_back(std::move(f));
    return OkStatus();
  }

  StatusOr<int64_t> ReadBuckets(const toml::table& t, const std::string& key) {
    if (!t.contains("buckets")) return r_.Error(t, key + ".buckets", "missing");
    int64_t buckets = 0;
    DTF_RETURN_IF_ERROR(
        r_.ReadIntInRange(t, key, "buckets", 1, kMaxBuckets, &buckets));
    return buckets;
  }

  Status ParseHashed(const toml::table& t, const std::string& key) {
    HashedFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    DTF_ASSIGN_OR_RETURN(
        const ColumnSpec* column,
        Column(SourceAt(t), key + ".source", f.source,
               {ValueType::kString, ValueType::kInt}, "a str or int column"));
    f.source_type = column->type;
    DTF_ASSIGN_OR_RETURN(f.buckets, ReadBuckets(t, key));
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->hashed.push_back(std::move(f));
    return OkStatus();
  }

  Status ParseBucketized(const toml::table& t, const std::string& key) {
    BucketizedFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    std::optional<FeatureSpec::Ref> ref = spec_->Find(f.source);
    if (ref && ref->kind == FeatureKind::kNumeric) {
      if (spec_->numeric[ref->index].dimension != 1) {
        return r_.Error(SourceAt(t), key + ".source",
                        StrCat("numeric feature ", QuoteForMessage(f.source),
                               " holds a vector; bucketize a single column"));
      }
      f.source_kind = InputKind::kFeature;
      used_.insert(f.source);
    } else {
      DTF_RETURN_IF_ERROR(Column(SourceAt(t), key + ".source", f.source,
                                 {ValueType::kInt, ValueType::kFloat},
                                 "a numeric feature or an int or float column")
                              .status());
    }
    const toml::node* n = t.get("boundaries");
    const std::string b_key = key + ".boundaries";
    if (n == nullptr) return r_.Error(t, b_key, "missing");
    if (!n->is_array() || n->as_array()->empty()) {
      return r_.Error(*n, b_key,
                      StrCat("expected a non-empty list of numbers, got ",
                             toml_util::Text(*n)));
    }
    for (size_t i = 0; i < n->as_array()->size(); ++i) {
      const toml::node& element = *n->as_array()->get(i);
      const std::string element_key = StrCat(b_key, "[", i, "]");
      DTF_ASSIGN_OR_RETURN(const double b, r_.GetFinite(element, element_key));
      if (!f.boundaries.empty() && !(b > f.boundaries.back())) {
        return r_.Error(element, element_key,
                        StrCat("boundaries must be strictly increasing: ",
                               toml_util::Text(element), " after ",
                               ValueToString(f.boundaries.back())));
      }
      f.boundaries.push_back(b);
    }
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->bucketized.push_back(std::move(f));
    return OkStatus();
  }

  // One input of a cross: a categorical, hashed or bucketized feature, else
  // a str or int column.
  StatusOr<CrossInput> ResolveCrossInput(const toml::node& n,
                                         const std::string& key,
                                         const std::string& name) {
    std::optional<FeatureSpec::Ref> ref = spec_->Find(name);
    if (ref && (ref->kind == FeatureKind::kCategorical ||
                ref->kind == FeatureKind::kHashed ||
                ref->kind == FeatureKind::kBucketized)) {
      used_.insert(name);
      return CrossInput{name, InputKind::kFeature};
    }
    if (ref && schema_.FindColumn(name) == nullptr) {
      return r_.Error(n, key,
                      StrCat(QuoteForMessage(name),
                             ref->kind == FeatureKind::kNumeric
                                 ? " is a numeric feature; cross a "
                                   "bucketized feature of it"
                                 : " is a crossed feature; list its columns "
                                   "instead"));
    }
    DTF_RETURN_IF_ERROR(Column(n.source(), key, name,
                               {ValueType::kString, ValueType::kInt},
                               "a categorical, hashed or bucketized feature, "
                               "or a str or int column")
                            .status());
    return CrossInput{name, InputKind::kColumn};
  }

  Status ParseCrossed(const toml::table& t, const std::string& key) {
    CrossedFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, nullptr));
    const toml::node* n = t.get("columns");
    const std::string c_key = key + ".columns";
    if (n == nullptr) return r_.Error(t, c_key, "missing");
    const toml::array* array = n->as_array();
    if (array == nullptr || array->size() < 2) {
      return r_.Error(*n, c_key,
                      StrCat("expected a list of at least two names, got ",
                             toml_util::Text(*n)));
    }
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string element_key = StrCat(c_key, "[", i, "]");
      DTF_ASSIGN_OR_RETURN(const std::string name,
                           r_.GetString(element, element_key));
      for (const CrossInput& before : f.columns) {
        if (before.name == name) {
          return r_.Error(element, element_key,
                          StrCat(QuoteForMessage(name), " is listed twice"));
        }
      }
      if (name == f.name) {
        return r_.Error(element, element_key, "a cross cannot use itself");
      }
      DTF_ASSIGN_OR_RETURN(CrossInput input,
                           ResolveCrossInput(element, element_key, name));
      f.columns.push_back(std::move(input));
    }
    DTF_ASSIGN_OR_RETURN(f.buckets, ReadBuckets(t, key));
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->crossed.push_back(std::move(f));
    return OkStatus();
  }

  Status ParseDate(const toml::table& t, const std::string& key) {
    DateFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    DTF_RETURN_IF_ERROR(Column(SourceAt(t), key + ".source", f.source,
                               {ValueType::kString}, "a str column")
                            .status());
    if (const toml::node* n = t.get("format")) {
      DTF_ASSIGN_OR_RETURN(
          const int c,
          r_.GetChoice(*n, key + ".format",
                       {"auto", "iso8601", "ymd", "mdy", "dmy", "compact"}));
      f.format = static_cast<DateFormat>(c);
      r_.Remember(key + ".format", *n);
    }
    if (const toml::node* n = t.get("parts")) {
      const std::string p_key = key + ".parts";
      r_.Remember(p_key, *n);
      const toml::array* array = n->as_array();
      if (array == nullptr || array->empty()) {
        return r_.Error(*n, p_key,
                        StrCat("expected a non-empty list of parts, got ",
                               toml_util::Text(*n)));
      }
      bool seen[kNumDateParts] = {};
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& element = *array->get(i);
        const std::string element_key = StrCat(p_key, "[", i, "]");
        DTF_ASSIGN_OR_RETURN(const int c,
                             r_.GetChoice(element, element_key,
                                          {"year", "month", "day", "weekday",
                                           "hour", "epoch_days"}));
        if (seen[c]) {
          return r_.Error(
              element, element_key,
              StrCat("\"", DatePartName(DatePart(c)), "\" is listed twice"));
        }
        seen[c] = true;
      }
      f.parts.clear();
      for (int c = 0; c < kNumDateParts; ++c) {
        if (seen[c]) f.parts.push_back(static_cast<DatePart>(c));
      }
    }
    if (const toml::node* n = t.get("default")) {
      DTF_ASSIGN_OR_RETURN(std::string text,
                           r_.GetString(*n, key + ".default"));
      r_.Remember(key + ".default", *n);
      StatusOr<DateTime> parsed = dtf::ParseDate(text, f.format);
      if (!parsed.ok()) {
        return r_.Error(*n, key + ".default", Message(parsed.status()));
      }
      f.default_value = std::move(text);
    }
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->date.push_back(std::move(f));
    return OkStatus();
  }

  Status ParseText(const toml::table& t, const std::string& key) {
    TextFeature f;
    DTF_RETURN_IF_ERROR(ReadNames(t, key, &f.name, &f.source));
    DTF_RETURN_IF_ERROR(Column(SourceAt(t), key + ".source", f.source,
                               {ValueType::kString}, "a str column")
                            .status());
    DTF_ASSIGN_OR_RETURN(f.buckets, ReadBuckets(t, key));
    if (const toml::node* n = t.get("ngrams")) {
      DTF_ASSIGN_OR_RETURN(const int64_t ngrams,
                           r_.GetInt(*n, key + ".ngrams"));
      r_.Remember(key + ".ngrams", *n);
      if (ngrams != 1 && ngrams != 2) {
        return r_.Error(*n, key + ".ngrams",
                        StrCat("must be 1 (words) or 2 (words and bigrams), "
                               "got ",
                               ngrams));
      }
      f.ngrams = static_cast<int>(ngrams);
    }
    DTF_RETURN_IF_ERROR(ReadUse(t, key, &f));
    spec_->text.push_back(std::move(f));
    return OkStatus();
  }

  Reader& r_;
  const Schema& schema_;
  const std::string& dir_;
  FeatureSpec* spec_;
  std::map<std::string, std::string> names_;  // feature name -> its key
  std::set<std::string> used_;  // features that are inputs of others
};

}  // namespace

Status ParseFeatureSpec(toml_util::Reader& r, const toml_util::Table& table,
                        const Schema& schema, const std::string& dir,
                        FeatureSpec* spec) {
  r.Remember("features", table.table);
  return FeatureParser(r, schema, dir, spec).Parse(table.table);
}

}  // namespace dtf
