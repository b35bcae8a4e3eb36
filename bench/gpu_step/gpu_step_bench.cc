// Training-step throughput of a wide MLP (784-1024-1024-10, ReLU, softmax
// cross-entropy, SGD) at batch 4096 on one GPU, through dtf's kernels exactly
// as lib/runtime/model/model.cc sequences them (forward, loss, backward,
// updates), and the dense layers' achieved TFLOP/s beside cuBLAS's own SGEMM
// rate on the same shapes. Prints one JSON object; run.sh puts PyTorch beside
// it.
//
//   gpu_step_bench [--steps N] [--warmup N] [--batch N]
//
// Without a usable CUDA device it prints why and exits with status 2.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/context.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/loss.h"
#include "lib/kernels/sgd.h"
#include "lib/kernels/tensor.h"
#include "lib/kernels/transfer.h"

namespace dtf::kernels {
namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int steps = 50;
  int warmup = 5;
  int64_t batch = 4096;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--steps") == 0) f.steps = int(v);
    if (std::strcmp(argv[i], "--warmup") == 0) f.warmup = int(v);
    if (std::strcmp(argv[i], "--batch") == 0) f.batch = v;
  }
  return f;
}

Tensor Uniform(std::initializer_list<int64_t> shape, float limit,
               std::mt19937& rng) {
  Tensor t = Tensor::Empty(shape);
  std::uniform_real_distribution<float> d(-limit, limit);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = d(rng);
  return t;
}

#define CHECK_OK(expr)                                        \
  do {                                                        \
    const ::dtf::Status _st = (expr);                         \
    if (!_st.ok()) {                                          \
      std::fprintf(stderr, "%s: %s\n", #expr,                 \
                   std::string(::dtf::Message(_st)).c_str()); \
      std::exit(1);                                           \
    }                                                         \
  } while (0)

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  StatusOr<Context> made = Context::Cuda(0);
  if (!made.ok()) {
    std::fprintf(stderr, "gpu_step_bench: no CUDA device: %s\n",
                 std::string(Message(made.status())).c_str());
    return 2;
  }
  const Context& ctx = *made;
  const std::string gpu = (*CudaDevices())[0].name;
  const std::vector<int64_t> widths = {784, 1024, 1024, 10};
  const int layers = int(widths.size()) - 1;
  std::mt19937 rng(7);

  // Parameters (glorot-uniform kernels, zero biases) and synthetic data.
  std::vector<Tensor> w(layers), b(layers), dw(layers), db(layers);
  std::vector<OptimizerState> sw(layers), sb(layers);
  StatusOr<std::unique_ptr<Sgd>> sgd = Sgd::Create({.learning_rate = 0.01f});
  CHECK_OK(sgd.status());
  for (int l = 0; l < layers; ++l) {
    const float limit = std::sqrt(6.0f / float(widths[l] + widths[l + 1]));
    CHECK_OK(CopyToDevice(ctx, Uniform({widths[l], widths[l + 1]}, limit, rng),
                          &w[size_t(l)]));
    CHECK_OK(CopyToDevice(ctx, Tensor::Zeros({widths[l + 1]}), &b[size_t(l)]));
    sw[size_t(l)] = (*sgd)->CreateState(w[size_t(l)].shape());
    sb[size_t(l)] = (*sgd)->CreateState(b[size_t(l)].shape());
    sw[size_t(l)].MoveTo(Memory::kDevice);
    sb[size_t(l)].MoveTo(Memory::kDevice);
  }
  Tensor x, dlogits;
  CHECK_OK(CopyToDevice(ctx, Uniform({f.batch, widths[0]}, 1.0f, rng), &x));
  IdTensor labels_host = IdTensor::Empty(f.batch), labels;
  for (int64_t i = 0; i < f.batch; ++i) labels_host[i] = int64_t(rng() % 10);
  CHECK_OK(CopyToDevice(ctx, labels_host, &labels));
  std::vector<Tensor> h(layers), dh(layers);

  constexpr MatMulOptions kTransA{.transpose_a = true};
  constexpr MatMulOptions kTransB{.transpose_b = true};
  auto step = [&]() -> float {
    const Tensor* in = &x;
    for (int l = 0; l < layers; ++l) {
      CHECK_OK(MatMul(ctx, *in, w[size_t(l)], &h[size_t(l)]));
      CHECK_OK(BiasAdd(ctx, b[size_t(l)], &h[size_t(l)]));
      if (l + 1 < layers) CHECK_OK(Relu(ctx, h[size_t(l)], &h[size_t(l)]));
      in = &h[size_t(l)];
    }
    StatusOr<float> loss =
        SoftmaxCrossEntropy(ctx, h[size_t(layers - 1)], labels, &dlogits);
    CHECK_OK(loss.status());
    const Tensor* d = &dlogits;
    for (int l = layers - 1; l >= 0; --l) {
      const Tensor& input = l == 0 ? x : h[size_t(l - 1)];
      CHECK_OK(MatMul(ctx, input, *d, &dw[size_t(l)], kTransA));
      CHECK_OK(BiasAddGrad(ctx, *d, &db[size_t(l)]));
      if (l > 0) {
        CHECK_OK(MatMul(ctx, *d, w[size_t(l)], &dh[size_t(l)], kTransB));
        CHECK_OK(
            ReluGrad(ctx, h[size_t(l - 1)], dh[size_t(l)], &dh[size_t(l)]));
        d = &dh[size_t(l)];
      }
    }
    for (int l = 0; l < layers; ++l) {
      CHECK_OK((*sgd)->ApplyDense(ctx, &w[size_t(l)], dw[size_t(l)],
                                  &sw[size_t(l)]));
      CHECK_OK((*sgd)->ApplyDense(ctx, &b[size_t(l)], db[size_t(l)],
                                  &sb[size_t(l)]));
    }
    return *loss;
  };

  for (int i = 0; i < f.warmup; ++i) step();
  CHECK_OK(ctx.Synchronize());
  const auto t0 = Clock::now();
  float first = 0, last = 0;
  for (int i = 0; i < f.steps; ++i) {
    last = step();
    if (i == 0) first = last;
  }
  CHECK_OK(ctx.Synchronize());
  const double seconds =
      std::chrono::duration<double>(Clock::now() - t0).count();

  // The dense layers alone: the step's eight GEMMs (three forward, three
  // weight gradients, two input gradients; the first layer's input gradient
  // is never needed) timed back to back, and one large square SGEMM.
  double flops_per_step = 0;
  for (int l = 0; l < layers; ++l) {
    const double macs =
        double(f.batch) * double(widths[l]) * double(widths[l + 1]);
    flops_per_step += 2 * macs * (l == 0 ? 2 : 3);
  }
  const auto g0 = Clock::now();
  for (int i = 0; i < f.steps; ++i) {
    const Tensor* in = &x;
    for (int l = 0; l < layers; ++l) {
      CHECK_OK(MatMul(ctx, *in, w[size_t(l)], &h[size_t(l)]));
      in = &h[size_t(l)];
    }
    for (int l = layers - 1; l >= 0; --l) {
      const Tensor& input = l == 0 ? x : h[size_t(l - 1)];
      const Tensor& d = l == layers - 1 ? dlogits : dh[size_t(l + 1)];
      CHECK_OK(MatMul(ctx, input, d, &dw[size_t(l)], kTransA));
      if (l > 0)
        CHECK_OK(MatMul(ctx, d, w[size_t(l)], &dh[size_t(l)], kTransB));
    }
  }
  CHECK_OK(ctx.Synchronize());
  const double gemm_seconds =
      std::chrono::duration<double>(Clock::now() - g0).count();
  const int64_t n = 8192;
  Tensor a, bb, c;
  CHECK_OK(CopyToDevice(ctx, Uniform({n, n}, 1.0f, rng), &a));
  CHECK_OK(CopyToDevice(ctx, Uniform({n, n}, 1.0f, rng), &bb));
  CHECK_OK(MatMul(ctx, a, bb, &c));
  CHECK_OK(ctx.Synchronize());
  const int reps = 10;
  const auto s0 = Clock::now();
  for (int i = 0; i < reps; ++i) CHECK_OK(MatMul(ctx, a, bb, &c));
  CHECK_OK(ctx.Synchronize());
  const double square_seconds =
      std::chrono::duration<double>(Clock::now() - s0).count();

  std::printf(
      "{\"gpu\": \"%s\", \"batch\": %lld, \"steps\": %d, "
      "\"steps_per_sec\": %.3f, \"examples_per_sec\": %.0f, "
      "\"first_loss\": %.4f, \"last_loss\": %.4f, "
      "\"step_tflops\": %.2f, \"dense_layers_tflops\": %.2f, "
      "\"cublas_sgemm_8192_tflops\": %.2f}\n",
      gpu.c_str(), (long long)f.batch, f.steps, f.steps / seconds,
      double(f.batch) * f.steps / seconds, first, last,
      flops_per_step * f.steps / seconds / 1e12,
      flops_per_step * f.steps / gemm_seconds / 1e12,
      2.0 * double(n) * n * n * reps / square_seconds / 1e12);
  return 0;
}

}  // namespace
}  // namespace dtf::kernels

int main(int argc, char** argv) { return dtf::kernels::Main(argc, argv); }
