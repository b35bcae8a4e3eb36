// CPU matrix product throughput: dtf's MatMul (lib/kernels/dense.h) beside
// Eigen's tensor contraction on a thread pool of the same size, on the same
// operands in the same run. Eigen is what MatMul runs on the CPU, so the
// ratio is what dtf's layer costs.
//
//   matmul_bench [--m 1024] [--k 512] [--n 512] [--reps 20]
//
// Prints one row per thread count (1, 2, ... up to the cores here): the
// best time of --reps products and its GFLOP/s for each.
#define EIGEN_USE_THREADS
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "lib/kernels/context.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/tensor.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace dtf::kernels {
namespace {

using Clock = std::chrono::steady_clock;
using ConstMap =
    Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
using Map = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;

template <typename F>
double Best(int reps, F f) {
  f();  // warm-up
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

int Main(int argc, char** argv) {
  int64_t m = 1024, k = 512, n = 512;
  int reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int64_t v = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--m") == 0)
      m = v;
    else if (std::strcmp(argv[i], "--k") == 0)
      k = v;
    else if (std::strcmp(argv[i], "--n") == 0)
      n = v;
    else if (std::strcmp(argv[i], "--reps") == 0)
      reps = int(v);
    else {
      std::fprintf(stderr,
                   "usage: matmul_bench [--m M] [--k K] [--n N] "
                   "[--reps R]\n");
      return 2;
    }
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor a = Tensor::Zeros({m, k});
  Tensor b = Tensor::Zeros({k, n});
  for (float& v : a.span()) v = uniform(rng);
  for (float& v : b.span()) v = uniform(rng);
  Tensor c;
  Tensor eigen_out = Tensor::Zeros({m, n});
  const ConstMap ea(a.data(), m, k);
  const ConstMap eb(b.data(), k, n);
  Map ec(eigen_out.data(), m, n);
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(1, 0)};
  const double flops = 2.0 * double(m) * double(k) * double(n);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("MatMul %lldx%lld by %lldx%lld, best of %d\n", (long long)m,
              (long long)k, (long long)k, (long long)n, reps);
  std::printf("%8s  %12s  %12s  %12s  %12s  %8s\n", "threads", "dtf ms",
              "dtf GFLOP/s", "Eigen ms", "Eigen GFLOP/s", "dtf/Eigen");
  for (int threads = 1; threads <= cores; threads *= 2) {
    Context ctx = Context::Cpu(threads);
    const double dtf_s = Best(reps, [&] {
      if (!MatMul(ctx, a, b, &c).ok()) std::abort();
    });
    Eigen::ThreadPool pool(threads);
    Eigen::ThreadPoolDevice device(&pool, threads);
    const double eigen_s =
        Best(reps, [&] { ec.device(device) = ea.contract(eb, dims); });
    std::printf("%8d  %12.2f  %12.1f  %12.2f  %12.1f  %8.2f\n", threads,
                dtf_s * 1e3, flops / dtf_s / 1e9, eigen_s * 1e3,
                flops / eigen_s / 1e9, eigen_s / dtf_s);
    if (threads < cores && threads * 2 > cores) threads = cores / 2;
  }
  return 0;
}

}  // namespace
}  // namespace dtf::kernels

int main(int argc, char** argv) { return dtf::kernels::Main(argc, argv); }
