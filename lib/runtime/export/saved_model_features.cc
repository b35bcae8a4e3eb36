// The SavedModel graph's feature columns: numeric values, vocabulary, hash,
// bucket, cross, date (saved_model_dates.cc) and text ids, as
// lib/runtime/model/feature_layer_transform.cc computes them.
#include <span>
#include <utility>

#include "lib/runtime/export/saved_model_builder.h"

namespace dtf::runtime::saved_model_internal {

using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

// The values of numeric feature `feature` in each of the n rows, as float
// [n, dimension]: the record's values, else the feature's default; a graph
// Assert fails the batch for a record with no value and no default, or with
// another number of values than the dimension.
std::string SmBuilder::NumericValues(const std::string& scope, size_t feature,
                                     const std::string& n,
                                     const SmColumn& column) {
  const NumericFeature& f = job_.features.numeric[feature];
  const int64_t d = f.dimension;
  const std::string sc = StrCat(scope, "/numeric/", f.name);
  std::string values = column.values;
  if (column.type != DT_FLOAT) {
    values = g_.Cast(StrCat(sc, "/to_float"), values, column.type, DT_FLOAT);
  }
  const std::string places =
      d == 1 || column.places.empty()
          ? g_.Op(StrCat(sc, "/places"), "ZerosLike", {column.rows}, DT_INT64)
          : column.places;
  const std::string indices =
      g_.Pack(StrCat(sc, "/indices"), {column.rows, places}, DT_INT64, 1);
  const std::string shape =
      g_.Pack(StrCat(sc, "/shape"), {n, g_.Int64(StrCat(sc, "/dimension"), d)},
              DT_INT64);
  NodeDef* sum =
      g_.Add(StrCat(sc, "/sum"), "ScatterNd", {indices, values, shape});
  TfGraph::SetType(sum, "T", DT_FLOAT);
  TfGraph::SetType(sum, "Tindices", DT_INT64);
  const std::string rows =
      g_.Op(StrCat(sc, "/rows"), "ExpandDims",
            {column.rows, g_.Int32(StrCat(sc, "/axis"), 1)}, DT_INT64);
  NodeDef* count =
      g_.Add(StrCat(sc, "/count"), "ScatterNd",
             {rows, g_.Op(StrCat(sc, "/ones"), "OnesLike", {values}, DT_FLOAT),
              g_.Reshape(StrCat(sc, "/rows_shape"), n, {1}, DT_INT64)});
  TfGraph::SetType(count, "T", DT_FLOAT);
  TfGraph::SetType(count, "Tindices", DT_INT64);
  const std::string zero = g_.Float(StrCat(sc, "/zero"), 0.0f);
  const std::string present =
      g_.Op(StrCat(sc, "/present"), "Greater", {count->name(), zero}, DT_FLOAT);
  std::string ok =
      g_.Op(StrCat(sc, "/complete"), "Equal",
            {count->name(), g_.Float(StrCat(sc, "/values_per_row"), float(d))},
            DT_FLOAT);
  if (f.default_value) {
    const std::string none =
        g_.Op(StrCat(sc, "/none"), "Equal", {count->name(), zero}, DT_FLOAT);
    ok = g_.Add(StrCat(sc, "/complete_or_none"), "LogicalOr", {ok, none})
             ->name();
  }
  const std::string check = AssertAll(
      StrCat(sc, "/check"), ok,
      StrCat("numeric feature \"", f.name, "\": a record holds ",
             f.default_value ? "" : "no value or ", "a number of values of \"",
             f.source, "\" other than ", d,
             f.default_value ? "" : ", and the feature sets no default"),
      "");
  const std::string fill =
      g_.Float(StrCat(sc, "/default"),
               f.default_value ? static_cast<float>(*f.default_value) : 0.0f);
  const std::string value = g_.Op(
      StrCat(sc, "/value"), "SelectV2",
      {g_.Op(StrCat(sc, "/present_row"), "ExpandDims",
             {present, g_.Int32(StrCat(sc, "/present_axis"), 1)}, DT_BOOL),
       sum->name(), fill},
      DT_FLOAT);
  return g_.Op(StrCat(sc, "/checked"), "Identity", {value, "^" + check},
               DT_FLOAT);
}

namespace {

// A column's values as the keys of vocabularies and hashes: integers as
// their decimal text, as dtf's vocabularies and hashes read them.
std::string SmKeysOf(TfGraph& g, const std::string& sc, const SmColumn& c) {
  if (c.type == DT_STRING) return c.values;
  return g.Op(StrCat(sc, "/as_string"), "AsString", {c.values}, c.type);
}

// `keys` hashed into `buckets` buckets.
std::string SmHashIds(TfGraph& g, const std::string& name,
                      const std::string& keys, int64_t buckets) {
  NodeDef* node = g.Add(name, "StringToHashBucketFast", {keys});
  TfGraph::SetInt(node, "num_buckets", buckets);
  return node->name();
}

}  // namespace

const SmColumn& SmBuilder::ColumnOf(const std::vector<SmColumn>& columns,
                                    const std::string& source) const {
  return columns[static_cast<size_t>(SourceIndex(source))];
}

SmIds SmBuilder::CategoricalIds(const std::string& scope, size_t feature,
                                const SmColumn& c) {
  const CategoricalFeature& f = job_.features.categorical[feature];
  const std::string sc = StrCat(scope, "/categorical/", f.name);
  const std::string keys = SmKeysOf(g_, sc, c);
  const std::string absent = g_.Int64(StrCat(sc, "/absent"), -1);
  NodeDef* find = g_.Add(StrCat(sc, "/lookup"), "LookupTableFindV2",
                         {tables_[feature], keys, absent});
  TfGraph::SetType(find, "Tin", DT_STRING);
  TfGraph::SetType(find, "Tout", DT_INT64);
  if (f.num_oov_buckets > 0) {
    const std::string oov = g_.Op(
        StrCat(sc, "/oov"), "AddV2",
        {SmHashIds(g_, StrCat(sc, "/oov_bucket"), keys, f.num_oov_buckets),
         g_.Int64(StrCat(sc, "/vocabulary_size"),
                  static_cast<int64_t>(f.vocabulary.size()))},
        DT_INT64);
    const std::string unknown = g_.Op(StrCat(sc, "/unknown"), "Equal",
                                      {find->name(), absent}, DT_INT64);
    return SmIds{g_.Op(StrCat(sc, "/ids"), "SelectV2",
                       {unknown, oov, find->name()}, DT_INT64),
                 c.rows};
  }
  const std::string known =
      g_.Op(StrCat(sc, "/known"), "GreaterEqual",
            {find->name(), g_.Int64(StrCat(sc, "/zero"), 0)}, DT_INT64);
  const std::string keep = g_.Reshape(
      StrCat(sc, "/keep"),
      g_.Op(StrCat(sc, "/where"), "Where", {known}, DT_BOOL), {-1}, DT_INT64);
  return SmIds{g_.Gather(StrCat(sc, "/ids"), find->name(), keep, DT_INT64),
               g_.Gather(StrCat(sc, "/rows"), c.rows, keep, DT_INT64)};
}

SmIds SmBuilder::BucketizedIds(const std::string& scope,
                               const BucketizedFeature& f, const std::string& n,
                               const std::vector<SmColumn>& columns,
                               const std::vector<std::string>& raw_numeric) {
  const FeatureSpec& fs = job_.features;
  const std::string sc = StrCat(scope, "/bucketized/", f.name);
  std::string values;
  std::string rows;
  if (f.source_kind == InputKind::kFeature) {
    for (size_t k = 0; k < fs.numeric.size(); ++k) {
      if (fs.numeric[k].name == f.source) values = raw_numeric[k];
    }
    rows = Range(sc, n);
  } else {
    const SmColumn& c = ColumnOf(columns, f.source);
    values = c.type == DT_FLOAT
                 ? c.values
                 : g_.Cast(StrCat(sc, "/to_float"), c.values, c.type, DT_FLOAT);
    rows = c.rows;
  }
  std::vector<float> boundaries;
  for (double b : f.boundaries) boundaries.push_back(static_cast<float>(b));
  NodeDef* bucket = g_.Add(StrCat(sc, "/bucketize"), "Bucketize", {values});
  TfGraph::SetType(bucket, "T", DT_FLOAT);
  TfGraph::SetFloatList(bucket, "boundaries", boundaries);
  return SmIds{g_.Cast(StrCat(sc, "/ids"), bucket->name(), DT_INT32, DT_INT64),
               rows};
}

StatusOr<SmIds> SmBuilder::CrossedIds(const std::string& scope,
                                      const CrossedFeature& f,
                                      const std::string& n,
                                      const std::vector<SmColumn>& columns,
                                      const std::vector<SmIds>& ids) {
  const std::string sc = StrCat(scope, "/crossed/", f.name);
  std::vector<std::string> indices, values, shapes;
  std::vector<DataType> types;
  const std::string shape = g_.Pack(
      StrCat(sc, "/shape"), {n, g_.Int64(StrCat(sc, "/one"), 1)}, DT_INT64);
  for (size_t k = 0; k < f.columns.size(); ++k) {
    const CrossInput& in = f.columns[k];
    std::string v;
    std::string rows;
    DataType type = DT_INT64;
    int found = -1;
    if (in.kind == InputKind::kFeature) {
      const auto& inputs = layer_.sparse_inputs();
      for (size_t s = 0; s < ids.size(); ++s) {
        if (inputs[s].name == in.name) found = static_cast<int>(s);
      }
    }
    if (found >= 0) {
      v = ids[static_cast<size_t>(found)].ids;
      rows = ids[static_cast<size_t>(found)].rows;
    } else {
      const SmColumn& c = ColumnOf(columns, in.name);
      if (c.type == DT_FLOAT) {
        return InvalidArgumentError(StrCat("crossed feature \"", f.name,
                                           "\": float column \"", in.name,
                                           "\" cannot cross"));
      }
      v = c.values;
      rows = c.rows;
      type = c.type;
    }
    const std::string zeros =
        g_.Op(StrCat(sc, "/zeros_", k), "ZerosLike", {rows}, DT_INT64);
    indices.push_back(
        g_.Pack(StrCat(sc, "/indices_", k), {rows, zeros}, DT_INT64, 1));
    values.push_back(v);
    shapes.push_back(shape);
    types.push_back(type);
  }
  std::vector<std::string> inputs = indices;
  inputs.insert(inputs.end(), values.begin(), values.end());
  inputs.insert(inputs.end(), shapes.begin(), shapes.end());
  NodeDef* cross =
      g_.Add(StrCat(sc, "/SparseCross"), "SparseCross", std::move(inputs));
  TfGraph::SetInt(cross, "N", static_cast<int64_t>(f.columns.size()));
  TfGraph::SetBool(cross, "hashed_output", true);
  TfGraph::SetInt(cross, "num_buckets", f.buckets);
  TfGraph::SetInt(cross, "hash_key",
                  static_cast<int64_t>(kernels::kDefaultCrossHashKey));
  TfGraph::SetTypeList(cross, "sparse_types", types);
  TfGraph::SetTypeList(cross, "dense_types", {});
  TfGraph::SetType(cross, "out_type", DT_INT64);
  TfGraph::SetType(cross, "internal_type", DT_INT64);
  const std::string rows =
      g_.Gather(StrCat(sc, "/rows"), TfOutput(cross->name(), 0),
                g_.Int64(StrCat(sc, "/row_column"), 0), DT_INT64, 1);
  return SmIds{TfOutput(cross->name(), 1), rows};
}

StatusOr<std::vector<SmIds>> SmBuilder::SparseIdsOf(
    const std::string& scope, const std::string& n,
    const std::vector<SmColumn>& columns,
    const std::vector<std::string>& raw_numeric,
    const std::vector<SmDate>& dates) {
  const FeatureSpec& fs = job_.features;
  std::vector<SmIds> out;
  for (size_t i = 0; i < fs.categorical.size(); ++i) {
    out.push_back(
        CategoricalIds(scope, i, ColumnOf(columns, fs.categorical[i].source)));
  }
  for (const HashedFeature& f : fs.hashed) {
    const std::string sc = StrCat(scope, "/hashed/", f.name);
    const SmColumn& c = ColumnOf(columns, f.source);
    out.push_back(
        SmIds{SmHashIds(g_, StrCat(sc, "/ids"), SmKeysOf(g_, sc, c), f.buckets),
              c.rows});
  }
  for (const BucketizedFeature& f : fs.bucketized) {
    out.push_back(BucketizedIds(scope, f, n, columns, raw_numeric));
  }
  for (const CrossedFeature& f : fs.crossed) {
    DTF_ASSIGN_OR_RETURN(SmIds ids, CrossedIds(scope, f, n, columns, out));
    out.push_back(std::move(ids));
  }
  for (size_t i = 0; i < fs.date.size(); ++i) {
    for (DatePart part : fs.date[i].parts) {
      if (!IsCalendarPart(part)) continue;
      out.push_back(SmIds{dates[i].Part(part),
                          Range(StrCat(scope, "/date/", fs.date[i].name, "/",
                                       DatePartName(part)),
                                n)});
    }
  }
  for (const TextFeature& f : fs.text) {
    out.push_back(TextIds(StrCat(scope, "/text/", f.name), f,
                          ColumnOf(columns, f.source)));
  }
  return out;
}

// A text feature's terms (lib/data/text_tokens.h) hashed: ASCII lower case,
// every run of characters other than ASCII letters, digits and non-ASCII
// characters made one space, split on spaces, unigrams then bigrams of each
// value.
SmIds SmBuilder::TextIds(const std::string& sc, const TextFeature& f,
                         const SmColumn& c) {
  NodeDef* lower = g_.Add(StrCat(sc, "/lower"), "StringLower", {c.values});
  TfGraph::SetString(lower, "encoding", "");
  NodeDef* spaced =
      g_.Add(StrCat(sc, "/separators"), "StaticRegexReplace", {lower->name()});
  TfGraph::SetString(spaced, "pattern", "[^a-z0-9\\x{80}-\\x{10ffff}]+");
  TfGraph::SetString(spaced, "rewrite", " ");
  TfGraph::SetBool(spaced, "replace_global", true);
  NodeDef* split =
      g_.Add(StrCat(sc, "/split"), "StringSplitV2",
             {spaced->name(), g_.String(StrCat(sc, "/whitespace"), "")});
  TfGraph::SetInt(split, "maxsplit", -1);
  // The tokens of each value as row splits.
  const std::string token_value =
      g_.Gather(StrCat(sc, "/token_value"), TfOutput(split->name(), 0),
                g_.Int64(StrCat(sc, "/value_column"), 0), DT_INT64, 1);
  NodeDef* values = g_.Add(StrCat(sc, "/values"), "Size", {c.values});
  TfGraph::SetType(values, "T", DT_STRING);
  TfGraph::SetType(values, "out_type", DT_INT64);
  NodeDef* counts =
      g_.Add(StrCat(sc, "/tokens_per_value"), "UnsortedSegmentSum",
             {g_.Op(StrCat(sc, "/ones"), "OnesLike", {token_value}, DT_INT64),
              token_value, values->name()});
  TfGraph::SetType(counts, "T", DT_INT64);
  TfGraph::SetType(counts, "Tindices", DT_INT64);
  TfGraph::SetType(counts, "Tnumsegments", DT_INT64);
  NodeDef* cumsum =
      g_.Add(StrCat(sc, "/cumsum"), "Cumsum",
             {counts->name(), g_.Int32(StrCat(sc, "/cumsum_axis"), 0)});
  TfGraph::SetType(cumsum, "T", DT_INT64);
  TfGraph::SetType(cumsum, "Tidx", DT_INT32);
  TfGraph::SetBool(cumsum, "exclusive", false);
  TfGraph::SetBool(cumsum, "reverse", false);
  const int64_t zero = 0;
  const std::string splits = g_.Concat(
      StrCat(sc, "/token_splits"),
      {g_.Int64s(StrCat(sc, "/first_split"), std::span(&zero, 1), {1}),
       cumsum->name()},
      DT_INT64, 0);
  NodeDef* ngrams = g_.Add(StrCat(sc, "/ngrams"), "StringNGrams",
                           {TfOutput(split->name(), 1), splits});
  TfGraph::SetString(ngrams, "separator", " ");
  auto* widths = (*ngrams->mutable_attr())["ngram_widths"].mutable_list();
  for (int w = 1; w <= f.ngrams; ++w) widths->add_i(w);
  TfGraph::SetString(ngrams, "left_pad", "");
  TfGraph::SetString(ngrams, "right_pad", "");
  TfGraph::SetInt(ngrams, "pad_width", 0);
  TfGraph::SetBool(ngrams, "preserve_short_sequences", false);
  TfGraph::SetType(ngrams, "Tsplits", DT_INT64);
  const std::string terms = TfOutput(ngrams->name(), 0);
  // The value, then the row, of each term.
  NodeDef* total = g_.Add(StrCat(sc, "/terms"), "Size", {terms});
  TfGraph::SetType(total, "T", DT_STRING);
  TfGraph::SetType(total, "out_type", DT_INT64);
  const std::string positions = Range(sc, total->name());
  NodeDef* bound = g_.Add(
      StrCat(sc, "/upper_bound"), "UpperBound",
      {g_.Reshape(StrCat(sc, "/sorted"), TfOutput(ngrams->name(), 1), {1, -1},
                  DT_INT64),
       g_.Reshape(StrCat(sc, "/positions"), positions, {1, -1}, DT_INT64)});
  TfGraph::SetType(bound, "T", DT_INT64);
  TfGraph::SetType(bound, "out_type", DT_INT64);
  const std::string value =
      g_.Op(StrCat(sc, "/term_value"), "Sub",
            {g_.Reshape(StrCat(sc, "/bound"), bound->name(), {-1}, DT_INT64),
             g_.Int64(StrCat(sc, "/one"), 1)},
            DT_INT64);
  NodeDef* hash = g_.Add(StrCat(sc, "/ids"), "StringToHashBucketFast", {terms});
  TfGraph::SetInt(hash, "num_buckets", f.buckets);
  return SmIds{hash->name(),
               g_.Gather(StrCat(sc, "/rows"), c.rows, value, DT_INT64)};
}

}  // namespace dtf::runtime::saved_model_internal
