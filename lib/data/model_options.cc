#include "lib/data/model_options.h"

#include <toml++/toml.h>

#include <functional>
#include <string>

#include "lib/base/strings.h"
#include "lib/base/toml_util.h"
#include "lib/data/job_limits.h"

namespace dtf {

std::string_view ModelTypeName(ModelType type) {
  static constexpr std::string_view kNames[] = {"linear", "mlp", "wide_deep"};
  return kNames[static_cast<int>(type)];
}

std::string_view ActivationName(Activation activation) {
  static constexpr std::string_view kNames[] = {"relu", "tanh", "sigmoid"};
  return kNames[static_cast<int>(activation)];
}

std::string_view LossName(Loss loss) {
  static constexpr std::string_view kNames[] = {
      "binary_crossentropy", "softmax_crossentropy", "squared_error"};
  return kNames[static_cast<int>(loss)];
}

namespace {

using toml_util::Reader;

// Calls `fn(ref, key)` for every feature, key as "features.<kind>[<i>]".
void ForEachFeature(
    const FeatureSpec& features,
    const std::function<void(FeatureSpec::Ref, const std::string&)>& fn) {
  const size_t sizes[] = {features.numeric.size(), features.categorical.size(),
                          features.hashed.size(),  features.bucketized.size(),
                          features.crossed.size(), features.date.size(),
                          features.text.size()};
  for (int k = 0; k < kNumFeatureKinds; ++k) {
    const FeatureKind kind = static_cast<FeatureKind>(k);
    for (size_t i = 0; i < sizes[k]; ++i) {
      fn(FeatureSpec::Ref{kind, i},
         StrCat("features.", FeatureKindName(kind), "[", i, "]"));
    }
  }
}

// How the features feed `model`'s type; `type_node` is where model.type is.
Status CheckFeeds(const Reader& r, const toml::node& type_node,
                  const FeatureSpec& features, const ModelSpec& model) {
  Status status;
  int wide = 0;
  int deep = 0;
  ForEachFeature(features, [&](FeatureSpec::Ref ref, const std::string& key) {
    if (!status.ok()) return;
    const bool numeric = ref.kind == FeatureKind::kNumeric;
    if (model.type == ModelType::kLinear) {
      if (!numeric && features.Use(ref)->embedding > 0) {
        status = r.Error(r.Where(key + ".embedding"), key + ".embedding",
                         "a linear model has no deep part: drop the "
                         "embedding (the feature then feeds the model "
                         "one-hot)");
      }
      wide += features.FeedsWide(ref) || (numeric && features.FeedsDeep(ref));
      return;
    }
    if (model.type == ModelType::kMlp && features.FeedsWide(ref)) {
      status = r.Error(r.Where(key + ".wide"), key + ".wide",
                       numeric ? "an mlp model has no wide part: set "
                                 "wide = false"
                               : "feeds the wide part (wide defaults to true "
                                 "without an embedding), which an mlp model "
                                 "lacks: give it an embedding and wide = "
                                 "false");
    }
    wide += features.FeedsWide(ref);
    deep += features.FeedsDeep(ref);
  });
  DTF_RETURN_IF_ERROR(status);
  if (model.type == ModelType::kLinear && wide == 0) {
    return r.Error(type_node, "model.type",
                   "a linear model needs at least one feature in [features]");
  }
  if (model.has_wide() && model.has_deep() && wide == 0) {
    return r.Error(type_node, "model.type",
                   "a wide_deep model needs at least one feature feeding the "
                   "wide part (wide = true)");
  }
  if (model.has_deep() && deep == 0) {
    return r.Error(type_node, "model.type",
                   StrCat("a", model.type == ModelType::kMlp ? "n " : " ",
                          ModelTypeName(model.type),
                          " model needs at least one feature feeding the deep "
                          "part (a numeric feature with deep = true, or an "
                          "embedding)"));
  }
  return OkStatus();
}

// The label against the loss; errors point at `where` (model.loss, or the
// [model] table when the loss is the default).
Status CheckLabel(const Reader& r, const toml::source_region& where,
                  const Schema& schema, const ModelSpec& model) {
  const std::string key = "model.loss";
  const std::string loss = StrCat(LossName(model.loss));
  if (!schema.label) {
    return r.Error(where, key,
                   StrCat(loss, " needs a label: set label in [schema]"));
  }
  const LabelSpec& label = *schema.label;
  const ColumnSpec* column = schema.FindColumn(label.column);
  const std::string quoted = QuoteForMessage(label.column);
  if (!label.mapping.empty()) {
    for (const auto& [text, id] : label.mapping) {
      const bool fits = model.loss == Loss::kBinaryCrossentropy
                            ? (id == 0 || id == 1)
                        : model.loss == Loss::kSoftmaxCrossentropy
                            ? (id >= 0 && id < model.classes)
                            : true;
      if (!fits) {
        return r.Error(
            where, key,
            StrCat(loss, " needs labels ",
                   model.loss == Loss::kBinaryCrossentropy
                       ? std::string("0 and 1")
                       : StrCat("in [0, ", model.classes, ")"),
                   "; the label map gives ", QuoteForMessage(text), " = ", id));
      }
    }
    return OkStatus();
  }
  if (column != nullptr && column->type == ValueType::kString) {
    return r.Error(where, key,
                   StrCat("the label ", quoted,
                          " is a str column: give [schema] label a map "
                          "(label = { column = ..., map = { ... } })"));
  }
  if (column != nullptr && column->type == ValueType::kFloat &&
      model.loss == Loss::kSoftmaxCrossentropy) {
    return r.Error(where, key,
                   StrCat(loss, " needs int labels; the label ", quoted,
                          " is a float column"));
  }
  return OkStatus();
}

Status ReadDeepKeys(Reader& r, const toml::table& t, ModelSpec* model) {
  if (model->type == ModelType::kLinear) {
    for (std::string_view name :
         {"hidden", "activation", "batch_norm", "dropout"}) {
      if (const toml::node* n = t.get(name)) {
        return r.Error(*n, StrCat("model.", name),
                       "only for mlp and wide_deep models (a linear model "
                       "has no deep part)");
      }
    }
    return OkStatus();
  }
  if (const toml::node* n = t.get("hidden")) {
    const toml::array* array = n->as_array();
    if (array == nullptr) {
      return r.Error(
          *n, "model.hidden",
          StrCat("expected a list of layer sizes, got ", toml_util::Text(*n)));
    }
    if (static_cast<int64_t>(array->size()) > kMaxHiddenLayers) {
      return r.Error(*n, "model.hidden",
                     StrCat(array->size(), " layers, over dtf's limit of ",
                            kMaxHiddenLayers));
    }
    model->hidden.clear();
    for (size_t i = 0; i < array->size(); ++i) {
      DTF_ASSIGN_OR_RETURN(
          const int64_t size,
          r.GetIntInRange(*array->get(i), StrCat("model.hidden[", i, "]"), 1,
                          kMaxLayerWidth));
      model->hidden.push_back(size);
    }
  }
  if (const toml::node* n = t.get("activation")) {
    DTF_ASSIGN_OR_RETURN(const int a, r.GetChoice(*n, "model.activation",
                                                  {"relu", "tanh", "sigmoid"}));
    model->activation = static_cast<Activation>(a);
  }
  DTF_RETURN_IF_ERROR(r.ReadBool(t, "model", "batch_norm", &model->batch_norm));
  DTF_RETURN_IF_ERROR(r.ReadFinite(t, "model", "dropout", &model->dropout));
  if (!(model->dropout >= 0 && model->dropout < 1)) {
    return r.Error(
        *t.get("dropout"), "model.dropout",
        StrCat("must be in [0, 1), got ", toml_util::Text(*t.get("dropout"))));
  }
  return OkStatus();
}

}  // namespace

Status ParseModelSpec(toml_util::Reader& r, const toml_util::Table& table,
                      const FeatureSpec& features, const Schema& schema,
                      ModelSpec* model) {
  const toml::table& t = table.table;
  r.Remember("model", t);
  DTF_RETURN_IF_ERROR(r.CheckKeys(t, "model",
                                  {"type", "hidden", "activation", "batch_norm",
                                   "dropout", "loss", "classes"}));
  const toml::node* type = t.get("type");
  if (type == nullptr) {
    return r.Error(t, "model.type", "missing (linear, mlp or wide_deep)");
  }
  DTF_ASSIGN_OR_RETURN(
      const int type_index,
      r.GetChoice(*type, "model.type", {"linear", "mlp", "wide_deep"}));
  model->type = static_cast<ModelType>(type_index);
  DTF_RETURN_IF_ERROR(ReadDeepKeys(r, t, model));
  const toml::node* loss = t.get("loss");
  if (loss != nullptr) {
    DTF_ASSIGN_OR_RETURN(
        const int loss_index,
        r.GetChoice(
            *loss, "model.loss",
            {"binary_crossentropy", "softmax_crossentropy", "squared_error"}));
    model->loss = static_cast<Loss>(loss_index);
  }
  const toml::node* classes = t.get("classes");
  if (model->loss == Loss::kSoftmaxCrossentropy) {
    if (classes == nullptr) {
      return r.Error(t, "model.classes",
                     "missing: softmax_crossentropy needs the number of "
                     "classes (>= 2)");
    }
    DTF_ASSIGN_OR_RETURN(
        model->classes,
        r.GetIntInRange(*classes, "model.classes", 2, kMaxClasses));
  } else if (classes != nullptr) {
    return r.Error(*classes, "model.classes",
                   "only with loss = \"softmax_crossentropy\"");
  }
  DTF_RETURN_IF_ERROR(CheckLabel(
      r, loss != nullptr ? loss->source() : t.source(), schema, *model));
  return CheckFeeds(r, *type, features, *model);
}

}  // namespace dtf
