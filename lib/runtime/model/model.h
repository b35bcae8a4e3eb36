// The models of docs/job-file.md ([model]): linear, mlp and wide_deep, as
// named variables plus a forward and a backward pass over ModelInputs.
//
// Variables are what a parameter server holds and a checkpoint stores; each
// belongs to the wide or the deep part (one optimizer per part), and the
// embedding and wide weight tables get row-sparse gradients (only the rows a
// batch touches). A Model is not thread-safe: Forward and Backward share
// activations kept between the two calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/model_options.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/feature_layer.h"

namespace dtf::runtime {

enum class Part { kWide, kDeep };

struct Variable {
  // "wide/<feature>", "wide/dense", "wide/bias",
  // "deep/<feature>/embedding", "deep/dense_<i>/kernel", "deep/dense_<i>/bias",
  // "deep/logits/kernel", "deep/logits/bias", "deep/batch_norm/gamma", ...
  std::string name;
  Part part = Part::kDeep;
  // Gradients are SparseGrad (rows of a [num_ids, d] table).
  bool sparse = false;
  // False for batch normalization's moving statistics, which the forward
  // pass updates and no optimizer touches.
  bool trainable = true;
  kernels::Tensor value;
};

// How a variable starts, as Keras and TensorFlow initialize it.
enum class Init {
  kZeros,
  kOnes,
  kGlorotUniform,    // U(-l, l), l = sqrt(6 / (rows + cols))
  kTruncatedNormal,  // N(0, 1/cols) redrawn beyond two deviations
};

// A variable without its values.
struct VariableSpec {
  std::string name;
  std::vector<int64_t> shape;
  Part part = Part::kDeep;
  bool sparse = false;
  bool trainable = true;
  Init init = Init::kZeros;
};

// The initial values of rows `rows` of `v` ([rows.size(), cols] into `out`):
// a function of (seed, v.name, row) alone, so that a parameter server makes
// its partition of a table without the rest, and every task agrees.
void InitializeRows(const VariableSpec& v, uint64_t seed,
                    std::span<const int64_t> rows, float* out);

// The gradient of one variable: `sparse` for a sparse variable, else
// `dense` (the variable's shape). Untrainable variables get none.
struct Gradient {
  kernels::Tensor dense;
  kernels::SparseGrad sparse;
};

class Model {
 public:
  // Creates the variables for `layer`'s inputs and initializes them as Keras
  // does (glorot-uniform dense kernels, zero biases, truncated-normal
  // embeddings with stddev 1/sqrt(dim), zero wide weights), from `seed`.
  // With `sparse_rows` false the sparse variables (embedding and wide
  // weight tables) start with no rows: the compact copy of a
  // parameter-server worker, whose pulls bring the rows each batch reads
  // (a table larger than the worker is never made whole).
  static StatusOr<std::unique_ptr<Model>> Create(const FeatureLayer& layer,
                                                 const ModelSpec& spec,
                                                 uint64_t seed,
                                                 bool sparse_rows = true);
  ~Model();
  // The variables Create makes, in the same order, without values.
  static StatusOr<std::vector<VariableSpec>> Layout(const FeatureLayer& layer,
                                                    const ModelSpec& spec);

  // The variables' names and whole shapes (also of a sparse variable that
  // holds only some rows), parallel to variables().
  const std::vector<VariableSpec>& specs() const { return specs_; }
  std::vector<Variable>& variables() { return variables_; }
  const std::vector<Variable>& variables() const { return variables_; }
  // Which sparse input (FeatureLayer::sparse_inputs() index) a sparse
  // variable is looked up with; -1 for a dense variable.
  int SparseInputOf(size_t variable) const;
  // The variable called `name`, or nullptr.
  Variable* Find(const std::string& name);

  // logits [rows, outputs]. `training` applies dropout (its mask drawn from
  // the seed and a per-call counter) and batch normalization by batch
  // statistics (updating the moving ones).
  Status Forward(const kernels::Context& ctx, const ModelInputs& inputs,
                 bool training, kernels::Tensor* logits);
  // The gradients of the loss with respect to every trainable variable, given
  // dloss/dlogits of the last Forward(training = true) call; `grads` is
  // parallel to variables() (entries of untrainable variables stay empty).
  // `ready(v)`, when given, is called as soon as variable v's gradient is
  // final (it is not written again in this call), deep layers from the top
  // first, then the embeddings, the wide part last: what the call computes
  // after it may overlap with sending it. An error from `ready` ends the
  // call with that error.
  using GradientReady = std::function<Status(size_t variable)>;
  Status Backward(const kernels::Context& ctx, const ModelInputs& inputs,
                  const kernels::Tensor& dlogits, std::vector<Gradient>* grads,
                  const GradientReady& ready = nullptr);

  const ModelSpec& spec() const { return spec_; }
  int64_t num_parameters() const;

 private:
  struct Dense {
    int kernel = -1;
    int bias = -1;
  };
  struct Activations;

  Model(const FeatureLayer& layer, const ModelSpec& spec, uint64_t seed);
  static StatusOr<std::unique_ptr<Model>> Build(const FeatureLayer& layer,
                                                const ModelSpec& spec,
                                                uint64_t seed, bool materialize,
                                                bool sparse_rows = true);
  int Add(std::string name, Part part, bool sparse, bool trainable,
          std::vector<int64_t> shape, Init init);
  kernels::Tensor& var(int i) { return variables_[size_t(i)].value; }
  // Backward's deep part; `done(v)` as Backward's `ready`.
  Status DeepBackward(const kernels::Context& ctx, const ModelInputs& inputs,
                      const kernels::Tensor& dlogits,
                      std::vector<Gradient>* grads,
                      const std::function<Status(int)>& done);

  std::vector<Variable> variables_;
  std::vector<VariableSpec> specs_;
  bool materialize_ = true;
  bool sparse_rows_ = true;
  std::vector<SparseInput> sparse_;
  ModelSpec spec_;
  uint64_t seed_ = 0;
  uint64_t dropout_calls_ = 0;
  // Wide part: a table per wide sparse input (-1 when not wide), the dense
  // weights (-1 without wide dense inputs) and the bias.
  std::vector<int> wide_tables_;
  int wide_dense_ = -1;
  int wide_bias_ = -1;
  // Deep part: an embedding per deep sparse input (-1 when none), batch
  // normalization's gamma, beta, moving mean and moving variance (-1 without
  // it), the hidden layers and the logits layer.
  std::vector<int> embeddings_;
  int bn_gamma_ = -1, bn_beta_ = -1, bn_mean_ = -1, bn_variance_ = -1;
  std::vector<Dense> hidden_;
  Dense logits_;
  int64_t deep_dense_width_ = 0;
  std::unique_ptr<Activations> act_;
};

}  // namespace dtf::runtime
