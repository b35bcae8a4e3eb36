#include "lib/runtime/model/model.h"

#include <cmath>
#include <span>
#include <utility>

#include "lib/base/strings.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/batch_norm.h"
#include "lib/kernels/concat.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/dropout.h"
#include "lib/kernels/embedding.h"
#include "lib/kernels/shape.h"

namespace dtf::runtime {
namespace {

using kernels::Context;
using kernels::Tensor;

// splitmix64: the counter-based generator behind every initial value.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1) from 53 random bits.
double Uniform(uint64_t bits) {
  return (double(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

uint64_t NameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

Status Activate(const Context& ctx, Activation activation, const Tensor& x,
                Tensor* y) {
  switch (activation) {
    case Activation::kRelu:
      return kernels::Relu(ctx, x, y);
    case Activation::kTanh:
      return kernels::Tanh(ctx, x, y);
    case Activation::kSigmoid:
      break;
  }
  return kernels::Sigmoid(ctx, x, y);
}

Status ActivateGrad(const Context& ctx, Activation activation, const Tensor& y,
                    const Tensor& dy, Tensor* dx) {
  switch (activation) {
    case Activation::kRelu:
      return kernels::ReluGrad(ctx, y, dy, dx);
    case Activation::kTanh:
      return kernels::TanhGrad(ctx, y, dy, dx);
    case Activation::kSigmoid:
      break;
  }
  return kernels::SigmoidGrad(ctx, y, dy, dx);
}

}  // namespace

void InitializeRows(const VariableSpec& v, uint64_t seed,
                    std::span<const int64_t> rows, float* out) {
  const int64_t cols = v.shape.size() > 1 ? v.shape[1] : 1;
  const uint64_t base = Mix(seed ^ NameHash(v.name));
  double limit = 0, stddev = 0;
  if (v.init == Init::kGlorotUniform) {
    limit = std::sqrt(6.0 / double(v.shape[0] + cols));
  } else if (v.init == Init::kTruncatedNormal) {
    stddev = 1.0 / std::sqrt(double(cols));
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    float* row = out + int64_t(r) * cols;
    uint64_t counter = Mix(base + uint64_t(rows[r]));
    for (int64_t c = 0; c < cols; ++c) {
      switch (v.init) {
        case Init::kZeros:
          row[c] = 0.0f;
          break;
        case Init::kOnes:
          row[c] = 1.0f;
          break;
        case Init::kGlorotUniform:
          row[c] = float((2 * Uniform(Mix(counter++)) - 1) * limit);
          break;
        case Init::kTruncatedNormal: {
          double x;
          do {  // Box-Muller, redrawn beyond two deviations
            const double u1 = Uniform(Mix(counter++));
            const double u2 = Uniform(Mix(counter++));
            x = std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
          } while (std::abs(x) > 2);
          row[c] = float(x * stddev);
          break;
        }
      }
    }
  }
}

// What Forward keeps for Backward.
struct Model::Activations {
  std::vector<Tensor> lookups;  // one per deep sparse input
  Tensor wide_lookup;
  Tensor x0;    // the deep input
  Tensor x_bn;  // batch-normalized x0
  kernels::BatchNormCache bn_cache;
  std::vector<Tensor> hidden;   // activations of each hidden layer
  std::vector<Tensor> masks;    // dropout masks
  std::vector<Tensor> dropped;  // hidden after dropout
  Tensor deep_logits;
  // Backward scratch.
  Tensor d_out, d_in, d_x0;
  std::vector<Tensor> d_parts;
};

Model::Model(const FeatureLayer& layer, const ModelSpec& spec, uint64_t seed)
    : sparse_(layer.sparse_inputs()),
      spec_(spec),
      seed_(seed),
      deep_dense_width_(layer.deep_width()),
      act_(std::make_unique<Activations>()) {}

Model::~Model() = default;

int Model::Add(std::string name, Part part, bool sparse, bool trainable,
               std::vector<int64_t> shape, Init init) {
  VariableSpec v{std::move(name), std::move(shape), part,
                 sparse,          trainable,        init};
  Tensor value;
  if (materialize_) {
    std::vector<int64_t> shape = v.shape;
    if (sparse && !sparse_rows_) shape[0] = 0;
    value = Tensor::Empty(shape);
    std::vector<int64_t> rows(static_cast<size_t>(shape[0]));
    for (size_t r = 0; r < rows.size(); ++r) rows[r] = int64_t(r);
    InitializeRows(v, seed_, rows, value.data());
  }
  variables_.push_back(
      Variable{v.name, part, v.sparse, trainable, std::move(value)});
  specs_.push_back(std::move(v));
  return static_cast<int>(variables_.size()) - 1;
}

namespace {

// The largest model Create makes: one variable of at most
// kMaxVariableElements, all of them together at most kMaxModelBytes of
// float32 (before an optimizer's slots). Layout refuses a larger one naming
// the variable, and Create checks the layout before it allocates anything.
constexpr int64_t kMaxVariableElements = int64_t{1} << 31;
constexpr int64_t kMaxModelBytes = int64_t{16} << 30;  // 16 GiB

// InvalidArgument unless every variable of `specs` and all of them together
// are within kMaxVariableElements and kMaxModelBytes.
Status CheckModelSize(const std::vector<VariableSpec>& specs) {
  int64_t total_bytes = 0;
  for (const VariableSpec& v : specs) {
    StatusOr<int64_t> bytes = kernels::CheckedByteSize(v.shape, sizeof(float));
    const int64_t elements = bytes.ok() ? *bytes / int64_t{sizeof(float)} : 0;
    if (!bytes.ok() || elements > kMaxVariableElements) {
      return InvalidArgumentError(
          StrCat("model: variable ", v.name, " of shape ",
                 kernels::ShapeString(v.shape), " is over the limit of ",
                 kMaxVariableElements,
                 " elements per variable (2^31); lower the feature's buckets, "
                 "vocabulary or embedding, or the model's hidden widths"));
    }
    if (__builtin_add_overflow(total_bytes, *bytes, &total_bytes) ||
        total_bytes > kMaxModelBytes) {
      return InvalidArgumentError(
          StrCat("model: its variables (up to ", v.name,
                 ") are over the "
                 "limit of ",
                 kMaxModelBytes, " bytes (", kMaxModelBytes >> 30,
                 " GiB of float32); lower the features' buckets, "
                 "vocabularies or embeddings, or the model's hidden widths"));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<VariableSpec>> Model::Layout(const FeatureLayer& layer,
                                                  const ModelSpec& spec) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> m,
                       Build(layer, spec, 0, /*materialize=*/false));
  DTF_RETURN_IF_ERROR(CheckModelSize(m->specs_));
  return m->specs_;
}

StatusOr<std::unique_ptr<Model>> Model::Create(const FeatureLayer& layer,
                                               const ModelSpec& spec,
                                               uint64_t seed,
                                               bool sparse_rows) {
  DTF_RETURN_IF_ERROR(Layout(layer, spec).status());
  return Build(layer, spec, seed, /*materialize=*/true, sparse_rows);
}

StatusOr<std::unique_ptr<Model>> Model::Build(const FeatureLayer& layer,
                                              const ModelSpec& spec,
                                              uint64_t seed, bool materialize,
                                              bool sparse_rows) {
  std::unique_ptr<Model> m(new Model(layer, spec, seed));
  m->materialize_ = materialize;
  m->sparse_rows_ = sparse_rows;
  const int64_t outputs = spec.outputs();
  m->wide_tables_.assign(m->sparse_.size(), -1);
  m->embeddings_.assign(m->sparse_.size(), -1);
  if (spec.has_wide()) {
    for (size_t i = 0; i < m->sparse_.size(); ++i) {
      const SparseInput& in = m->sparse_[i];
      if (!in.wide) continue;
      m->wide_tables_[i] = m->Add(StrCat("wide/", in.name), Part::kWide, true,
                                  true, {in.num_ids, outputs}, Init::kZeros);
    }
    if (layer.wide_width() > 0) {
      m->wide_dense_ = m->Add("wide/dense", Part::kWide, false, true,
                              {layer.wide_width(), outputs}, Init::kZeros);
    }
    m->wide_bias_ =
        m->Add("wide/bias", Part::kWide, false, true, {outputs}, Init::kZeros);
  }
  if (spec.has_deep()) {
    int64_t width = layer.deep_width();
    for (size_t i = 0; i < m->sparse_.size(); ++i) {
      const SparseInput& in = m->sparse_[i];
      if (in.embedding <= 0) continue;
      m->embeddings_[i] =
          m->Add(StrCat("deep/", in.name, "/embedding"), Part::kDeep, true,
                 true, {in.num_ids, in.embedding}, Init::kTruncatedNormal);
      width += in.embedding;
    }
    if (width == 0) {
      return InvalidArgumentError(
          "the deep part of the model has no inputs: give a numeric feature "
          "deep = true or a categorical feature an embedding");
    }
    if (spec.batch_norm) {
      m->bn_gamma_ = m->Add("deep/batch_norm/gamma", Part::kDeep, false, true,
                            {width}, Init::kOnes);
      m->bn_beta_ = m->Add("deep/batch_norm/beta", Part::kDeep, false, true,
                           {width}, Init::kZeros);
      m->bn_mean_ = m->Add("deep/batch_norm/moving_mean", Part::kDeep, false,
                           false, {width}, Init::kZeros);
      m->bn_variance_ = m->Add("deep/batch_norm/moving_variance", Part::kDeep,
                               false, false, {width}, Init::kOnes);
    }
    int64_t fan_in = width;
    for (size_t i = 0; i < spec.hidden.size(); ++i) {
      const int64_t units = spec.hidden[i];
      Dense d;
      d.kernel = m->Add(StrCat("deep/dense_", i, "/kernel"), Part::kDeep, false,
                        true, {fan_in, units}, Init::kGlorotUniform);
      d.bias = m->Add(StrCat("deep/dense_", i, "/bias"), Part::kDeep, false,
                      true, {units}, Init::kZeros);
      m->hidden_.push_back(d);
      fan_in = units;
    }
    m->logits_.kernel = m->Add("deep/logits/kernel", Part::kDeep, false, true,
                               {fan_in, outputs}, Init::kGlorotUniform);
    m->logits_.bias = m->Add("deep/logits/bias", Part::kDeep, false, true,
                             {outputs}, Init::kZeros);
  }
  return m;
}

int Model::SparseInputOf(size_t variable) const {
  for (size_t i = 0; i < sparse_.size(); ++i) {
    if (wide_tables_[i] == int(variable) || embeddings_[i] == int(variable)) {
      return int(i);
    }
  }
  return -1;
}

Variable* Model::Find(const std::string& name) {
  for (Variable& v : variables_) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

int64_t Model::num_parameters() const {
  int64_t n = 0;
  for (const Variable& v : variables_) {
    if (v.trainable) n += v.value.size();
  }
  return n;
}

Status Model::Forward(const Context& ctx, const ModelInputs& inputs,
                      bool training, Tensor* logits) {
  Activations& a = *act_;
  const int64_t rows = inputs.rows;
  const int64_t outputs = spec_.outputs();
  if (rows == 0) {
    logits->ResizeIn(ctx.memory(), {0, outputs});
    return OkStatus();
  }
  if (spec_.has_wide()) {
    if (wide_dense_ >= 0) {
      DTF_RETURN_IF_ERROR(
          kernels::MatMul(ctx, inputs.wide_dense, var(wide_dense_), logits));
    } else {
      *logits = Tensor::Zeros({rows, outputs}).CloneIn(ctx.memory());
    }
    for (size_t i = 0; i < sparse_.size(); ++i) {
      if (wide_tables_[i] < 0) continue;
      DTF_RETURN_IF_ERROR(
          kernels::EmbeddingLookup(ctx, var(wide_tables_[i]), inputs.ids[i],
                                   Combiner::kSum, &a.wide_lookup));
      DTF_RETURN_IF_ERROR(kernels::AddInPlace(ctx, a.wide_lookup, logits));
    }
    DTF_RETURN_IF_ERROR(kernels::BiasAdd(ctx, var(wide_bias_), logits));
  }
  if (!spec_.has_deep()) return OkStatus();

  // The deep input: dense columns, then each embedding.
  a.lookups.resize(sparse_.size());
  std::vector<const Tensor*> parts;
  if (deep_dense_width_ > 0) parts.push_back(&inputs.deep_dense);
  for (size_t i = 0; i < sparse_.size(); ++i) {
    if (embeddings_[i] < 0) continue;
    DTF_RETURN_IF_ERROR(
        kernels::EmbeddingLookup(ctx, var(embeddings_[i]), inputs.ids[i],
                                 sparse_[i].combiner, &a.lookups[i]));
    parts.push_back(&a.lookups[i]);
  }
  DTF_RETURN_IF_ERROR(kernels::ConcatColumns(ctx, parts, &a.x0));
  const Tensor* x = &a.x0;
  if (bn_gamma_ >= 0) {
    if (training) {
      DTF_RETURN_IF_ERROR(kernels::BatchNormTrain(
          ctx, a.x0, var(bn_gamma_), var(bn_beta_), &var(bn_mean_),
          &var(bn_variance_), {}, &a.x_bn, &a.bn_cache));
    } else {
      DTF_RETURN_IF_ERROR(kernels::BatchNormInfer(
          ctx, a.x0, var(bn_gamma_), var(bn_beta_), var(bn_mean_),
          var(bn_variance_), {}, &a.x_bn));
    }
    x = &a.x_bn;
  }
  const bool dropout = training && spec_.dropout > 0;
  a.hidden.resize(hidden_.size());
  a.masks.resize(hidden_.size());
  a.dropped.resize(hidden_.size());
  for (size_t i = 0; i < hidden_.size(); ++i) {
    Tensor& h = a.hidden[i];
    DTF_RETURN_IF_ERROR(kernels::MatMul(ctx, *x, var(hidden_[i].kernel), &h));
    DTF_RETURN_IF_ERROR(kernels::BiasAdd(ctx, var(hidden_[i].bias), &h));
    DTF_RETURN_IF_ERROR(Activate(ctx, spec_.activation, h, &h));
    x = &h;
    if (dropout) {
      const uint64_t seed =
          seed_ ^ (0x9E3779B97F4A7C15ull * (++dropout_calls_ + i));
      DTF_RETURN_IF_ERROR(kernels::Dropout(ctx, h, float(spec_.dropout), seed,
                                           &a.dropped[i], &a.masks[i]));
      x = &a.dropped[i];
    }
  }
  Tensor* deep = spec_.has_wide() ? &a.deep_logits : logits;
  DTF_RETURN_IF_ERROR(kernels::MatMul(ctx, *x, var(logits_.kernel), deep));
  DTF_RETURN_IF_ERROR(kernels::BiasAdd(ctx, var(logits_.bias), deep));
  if (spec_.has_wide()) {
    DTF_RETURN_IF_ERROR(kernels::AddInPlace(ctx, a.deep_logits, logits));
  }
  return OkStatus();
}

Status Model::Backward(const Context& ctx, const ModelInputs& inputs,
                       const Tensor& dlogits, std::vector<Gradient>* grads,
                       const GradientReady& ready) {
  grads->resize(variables_.size());
  auto done = [&](int i) -> Status {
    return ready && i >= 0 ? ready(size_t(i)) : OkStatus();
  };
  if (spec_.has_deep()) {
    DTF_RETURN_IF_ERROR(DeepBackward(ctx, inputs, dlogits, grads, done));
  }
  if (!spec_.has_wide()) return OkStatus();
  auto grad = [&](int i) -> Gradient& { return (*grads)[size_t(i)]; };
  constexpr kernels::MatMulOptions kTransA{.transpose_a = true};
  if (wide_dense_ >= 0) {
    DTF_RETURN_IF_ERROR(kernels::MatMul(ctx, inputs.wide_dense, dlogits,
                                        &grad(wide_dense_).dense, kTransA));
    DTF_RETURN_IF_ERROR(done(wide_dense_));
  }
  for (size_t i = 0; i < sparse_.size(); ++i) {
    if (wide_tables_[i] < 0) continue;
    DTF_RETURN_IF_ERROR(kernels::EmbeddingLookupGrad(
        ctx, inputs.ids[i], Combiner::kSum, dlogits,
        var(wide_tables_[i]).rows(), &grad(wide_tables_[i]).sparse));
    DTF_RETURN_IF_ERROR(done(wide_tables_[i]));
  }
  DTF_RETURN_IF_ERROR(
      kernels::BiasAddGrad(ctx, dlogits, &grad(wide_bias_).dense));
  return done(wide_bias_);
}

Status Model::DeepBackward(const Context& ctx, const ModelInputs& inputs,
                           const Tensor& dlogits, std::vector<Gradient>* grads,
                           const std::function<Status(int)>& done) {
  Activations& a = *act_;
  auto grad = [&](int i) -> Gradient& { return (*grads)[size_t(i)]; };
  constexpr kernels::MatMulOptions kTransA{.transpose_a = true};
  constexpr kernels::MatMulOptions kTransB{.transpose_b = true};

  // Logits layer, then the hidden layers from the top.
  const Tensor* top = a.hidden.empty() ? (bn_gamma_ >= 0 ? &a.x_bn : &a.x0)
                                       : (spec_.dropout > 0 ? &a.dropped.back()
                                                            : &a.hidden.back());
  DTF_RETURN_IF_ERROR(kernels::MatMul(ctx, *top, dlogits,
                                      &grad(logits_.kernel).dense, kTransA));
  DTF_RETURN_IF_ERROR(done(logits_.kernel));
  DTF_RETURN_IF_ERROR(
      kernels::BiasAddGrad(ctx, dlogits, &grad(logits_.bias).dense));
  DTF_RETURN_IF_ERROR(done(logits_.bias));
  DTF_RETURN_IF_ERROR(
      kernels::MatMul(ctx, dlogits, var(logits_.kernel), &a.d_out, kTransB));
  for (size_t k = hidden_.size(); k-- > 0;) {
    if (spec_.dropout > 0) {
      DTF_RETURN_IF_ERROR(
          kernels::DropoutGrad(ctx, a.d_out, a.masks[k], &a.d_in));
      std::swap(a.d_out, a.d_in);
    }
    DTF_RETURN_IF_ERROR(
        ActivateGrad(ctx, spec_.activation, a.hidden[k], a.d_out, &a.d_out));
    const Tensor* in =
        k == 0 ? (bn_gamma_ >= 0 ? &a.x_bn : &a.x0)
               : (spec_.dropout > 0 ? &a.dropped[k - 1] : &a.hidden[k - 1]);
    DTF_RETURN_IF_ERROR(kernels::MatMul(
        ctx, *in, a.d_out, &grad(hidden_[k].kernel).dense, kTransA));
    DTF_RETURN_IF_ERROR(done(hidden_[k].kernel));
    DTF_RETURN_IF_ERROR(
        kernels::BiasAddGrad(ctx, a.d_out, &grad(hidden_[k].bias).dense));
    DTF_RETURN_IF_ERROR(done(hidden_[k].bias));
    DTF_RETURN_IF_ERROR(kernels::MatMul(ctx, a.d_out, var(hidden_[k].kernel),
                                        &a.d_in, kTransB));
    std::swap(a.d_out, a.d_in);
  }
  const Tensor* d_x0 = &a.d_out;
  if (bn_gamma_ >= 0) {
    DTF_RETURN_IF_ERROR(kernels::BatchNormGrad(
        ctx, a.d_out, var(bn_gamma_), a.bn_cache, &a.d_x0,
        &grad(bn_gamma_).dense, &grad(bn_beta_).dense));
    DTF_RETURN_IF_ERROR(done(bn_gamma_));
    DTF_RETURN_IF_ERROR(done(bn_beta_));
    d_x0 = &a.d_x0;
  }
  // Split the input gradient back into its parts; the dense columns' part
  // is not needed.
  std::vector<int64_t> widths;
  std::vector<size_t> owners;
  if (deep_dense_width_ > 0) {
    widths.push_back(deep_dense_width_);
    owners.push_back(sparse_.size());
  }
  for (size_t i = 0; i < sparse_.size(); ++i) {
    if (embeddings_[i] < 0) continue;
    widths.push_back(sparse_[i].embedding);
    owners.push_back(i);
  }
  a.d_parts.resize(widths.size());
  std::vector<Tensor*> parts;
  for (Tensor& t : a.d_parts) parts.push_back(&t);
  DTF_RETURN_IF_ERROR(kernels::SplitColumns(ctx, *d_x0, widths, parts));
  for (size_t p = 0; p < owners.size(); ++p) {
    const size_t i = owners[p];
    if (i == sparse_.size()) continue;
    DTF_RETURN_IF_ERROR(kernels::EmbeddingLookupGrad(
        ctx, inputs.ids[i], sparse_[i].combiner, a.d_parts[p],
        var(embeddings_[i]).rows(), &grad(embeddings_[i]).sparse));
    DTF_RETURN_IF_ERROR(done(embeddings_[i]));
  }
  return OkStatus();
}

}  // namespace dtf::runtime
