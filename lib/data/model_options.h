// The job file's [model] table (docs/job-file.md): the model and its loss,
// as plain configuration for the trainer.
//
// How features feed each model type (features.h):
//   linear     One linear layer (TF's LinearClassifier) over every feature
//              that feeds anything: numeric features (deep or wide) as real
//              values, categorical kinds (wide) one-hot. Embeddings are an
//              error: there is no deep part.
//   mlp        A multilayer perceptron (DNNClassifier) over the deep inputs:
//              numeric features with deep = true and the embeddings of
//              categorical kinds. A feature feeding the wide part is an error.
//   wide_deep  Keras' WideDeepModel: the logits of a linear model over the
//              wide inputs (numeric features with wide = true as real values,
//              categorical kinds with wide = true one-hot) plus the logits of
//              an MLP over the deep inputs.
// The deep part: its input is the concatenation of the deep inputs,
// batch-normalized when batch_norm is set; then one Dense layer of each
// `hidden` size with `activation`, each followed by dropout when dropout > 0;
// then a Dense layer of outputs() units without activation (the logits).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/features.h"
#include "lib/data/schema.h"

namespace dtf {

enum class ModelType { kLinear, kMlp, kWideDeep };
std::string_view ModelTypeName(ModelType type);  // "linear", "mlp", ...

enum class Activation { kRelu, kTanh, kSigmoid };
std::string_view ActivationName(Activation activation);  // "relu", ...

// The loss over the logits and the label:
//   kBinaryCrossentropy   sigmoid cross-entropy; one logit; labels 0 or 1
//                         (int, or float in [0, 1]).
//   kSoftmaxCrossentropy  softmax cross-entropy over `classes` logits; int
//                         labels in [0, classes).
//   kSquaredError         mean squared error; one output; int or float
//                         labels (regression).
enum class Loss { kBinaryCrossentropy, kSoftmaxCrossentropy, kSquaredError };
std::string_view LossName(Loss loss);  // "binary_crossentropy", ...

struct ModelSpec {
  // type. Required.
  ModelType type = ModelType::kWideDeep;
  // hidden: the deep part's hidden layer sizes (each >= 1; empty: the logits
  // come straight from the deep input). mlp and wide_deep only. Default:
  // [128].
  std::vector<int64_t> hidden = {128};
  // activation of the hidden layers. mlp and wide_deep only. Default: relu.
  Activation activation = Activation::kRelu;
  // batch_norm: batch normalization of the deep part's input. mlp and
  // wide_deep only. Default: false.
  bool batch_norm = false;
  // dropout rate after each hidden layer, in [0, 1). mlp and wide_deep only.
  // Default: 0.
  double dropout = 0;
  // loss. Default: binary_crossentropy.
  Loss loss = Loss::kBinaryCrossentropy;
  // classes (>= 2): softmax_crossentropy only, and required there; 0
  // otherwise.
  int64_t classes = 0;

  // Logits per example: `classes` for softmax, else 1.
  int64_t outputs() const {
    return loss == Loss::kSoftmaxCrossentropy ? classes : 1;
  }
  bool has_wide() const { return type != ModelType::kMlp; }
  bool has_deep() const { return type != ModelType::kLinear; }
};

namespace toml_util {
class Reader;
struct Table;
}  // namespace toml_util

// Internal to lib/data (LoadJobFile): reads the [model] table into `*model`
// and checks it against `features` (already read by ParseFeatureSpec with
// the same reader) and the label of `schema`: the label must exist and fit
// the loss, and the features must feed the model type as described above.
// Errors are InvalidArgument "<file>:<line>:<col>: <key>: what is wrong".
Status ParseModelSpec(toml_util::Reader& r, const toml_util::Table& table,
                      const FeatureSpec& features, const Schema& schema,
                      ModelSpec* model);

}  // namespace dtf
