// SGD (plain, momentum, nesterov), Adagrad, Adam and FTRL on CUDA against the
// CPU kernels: several dense and sparse steps, so that the slots' state
// matters, then param, every slot and the step count compared. Bad sparse ids
// are found on the device and leave everything as it was.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "lib/base/strings.h"
#include "lib/kernels/adagrad.h"
#include "lib/kernels/adam.h"
#include "lib/kernels/ftrl.h"
#include "lib/kernels/optimizer.h"
#include "lib/kernels/sgd.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::RandomTensor;

// Several dependent steps, each with a few roundings that may differ (the
// device fuses multiply-adds; its powf is not the host's).
constexpr double kStepsRtol = testing::kReductionRtol;

struct Case {
  std::string name;
  std::unique_ptr<Optimizer> opt;
};

std::vector<Case> AllOptimizers() {
  std::vector<Case> out;
  out.push_back({"SGD", *Sgd::Create({.learning_rate = 0.1f})});
  out.push_back({"SGD momentum",
                 *Sgd::Create({.learning_rate = 0.1f, .momentum = 0.9f})});
  out.push_back({"SGD nesterov", *Sgd::Create({.learning_rate = 0.1f,
                                               .momentum = 0.9f,
                                               .nesterov = true})});
  out.push_back({"Adagrad", *Adagrad::Create({.learning_rate = 0.1f})});
  out.push_back({"Adam", *Adam::Create({.learning_rate = 0.1f})});
  out.push_back({"Ftrl sqrt",
                 *Ftrl::Create({.learning_rate = 0.1f,
                                .l1_regularization_strength = 0.01f,
                                .l2_regularization_strength = 0.01f,
                                .l2_shrinkage_regularization_strength = 0.02f,
                                .beta = 0.5f})});
  out.push_back({"Ftrl pow", *Ftrl::Create({.learning_rate = 0.1f,
                                            .learning_rate_power = -0.7f,
                                            .initial_accumulator_value = 0.3f,
                                            .l1_regularization_strength = 0.02f,
                                            .l2_regularization_strength = 0.1f,
                                            .beta = 0.2f})});
  return out;
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.data(), a.data() + a.size(), b.data());
}

class CudaOptimizersTest : public CudaTest {
 protected:
  // A variable and its state on both devices, stepped together.
  struct Pair {
    Tensor cpu_param;
    Tensor gpu_param;
    OptimizerState cpu_state;
    OptimizerState gpu_state;
  };

  Pair MakePair(const Optimizer& opt, std::initializer_list<int64_t> shape) {
    Pair p;
    p.cpu_param = RandomTensor(shape, rng_);
    p.gpu_param = ToGpu(p.cpu_param);
    p.cpu_state = opt.CreateState(p.cpu_param.shape());
    p.gpu_state = opt.CreateState(p.cpu_param.shape());
    p.gpu_state.MoveTo(Memory::kDevice);
    return p;
  }

  // The device's param and every slot against the CPU's.
  void ExpectSame(const Pair& p, const std::string& what) {
    ExpectMatchesCpu(ToHost(p.gpu_param), p.cpu_param, kStepsRtol,
                     what + " param");
    EXPECT_EQ(p.gpu_state.step(), p.cpu_state.step()) << what;
    ASSERT_EQ(p.gpu_state.num_slots(), p.cpu_state.num_slots()) << what;
    for (int s = 0; s < p.cpu_state.num_slots(); ++s) {
      EXPECT_EQ(p.gpu_state.slot(s).device(), Device::kCuda) << what;
      ExpectMatchesCpu(ToHost(p.gpu_state.slot(s)), p.cpu_state.slot(s),
                       kStepsRtol, what + " slot " + p.cpu_state.slot_name(s));
    }
  }

  // u sorted, unique ids of [0, v), at random.
  IdTensor RandomIds(int64_t u, int64_t v) {
    std::vector<int64_t> all(static_cast<size_t>(v));
    std::iota(all.begin(), all.end(), int64_t{0});
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(static_cast<size_t>(u));
    std::sort(all.begin(), all.end());
    return IdTensor::FromValues(all);
  }
};

TEST_F(CudaOptimizersTest, DenseStepsMatchTheCpu) {
  // The second shape has more elements than one grid covers (4096 blocks of
  // 256 threads), so the grid-stride loop goes round.
  struct Size {
    int64_t rows, cols;
  };
  for (const Size& size : {Size{37, 29}, Size{1000, 1100}, Size{1, 7}}) {
    for (const Case& c : AllOptimizers()) {
      const std::string what =
          StrCat(c.name, " [", size.rows, ", ", size.cols, "]");
      SCOPED_TRACE(what);
      Pair p = MakePair(*c.opt, {size.rows, size.cols});
      for (int step = 0; step < 4; ++step) {
        Tensor grad = RandomTensor({size.rows, size.cols}, rng_);
        ASSERT_TRUE(
            c.opt->ApplyDense(cpu(), &p.cpu_param, grad, &p.cpu_state).ok());
        Status st =
            c.opt->ApplyDense(gpu(), &p.gpu_param, ToGpu(grad), &p.gpu_state);
        ASSERT_TRUE(st.ok()) << st;
      }
      EXPECT_EQ(p.gpu_param.device(), Device::kCuda);
      ExpectSame(p, what);
    }
  }
}

TEST_F(CudaOptimizersTest, EmptyDenseVariable) {
  for (const Case& c : AllOptimizers()) {
    SCOPED_TRACE(c.name);
    Pair p = MakePair(*c.opt, {0, 5});
    Status st = c.opt->ApplyDense(gpu(), &p.gpu_param,
                                  ToGpu(Tensor::Empty({0, 5})), &p.gpu_state);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(p.gpu_state.step(), 1);
  }
}

TEST_F(CudaOptimizersTest, SparseStepsMatchTheCpu) {
  struct Size {
    int64_t v, d, u;
  };
  // Overlapping random row sets, so rows carry state from earlier steps;
  // U = 0 counts a step and moves nothing; the last size has more elements
  // than one grid covers.
  for (const Size& size : {Size{300, 45, 37}, Size{300, 45, 0}, Size{50, 1, 50},
                           Size{40000, 33, 35000}}) {
    for (const Case& c : AllOptimizers()) {
      const std::string what =
          StrCat(c.name, " V=", size.v, " D=", size.d, " U=", size.u);
      SCOPED_TRACE(what);
      Pair p = MakePair(*c.opt, {size.v, size.d});
      for (int step = 0; step < 4; ++step) {
        SparseGrad grad;
        grad.ids = RandomIds(size.u, size.v);
        grad.rows = RandomTensor({size.u, size.d}, rng_);
        SparseGrad gpu_grad;
        gpu_grad.ids = ToGpu(grad.ids);
        gpu_grad.rows = ToGpu(grad.rows);
        ASSERT_TRUE(
            c.opt->ApplySparse(cpu(), &p.cpu_param, grad, &p.cpu_state).ok());
        Status st =
            c.opt->ApplySparse(gpu(), &p.gpu_param, gpu_grad, &p.gpu_state);
        ASSERT_TRUE(st.ok()) << st;
      }
      ExpectSame(p, what);
    }
  }
}

TEST_F(CudaOptimizersTest, BadSparseIdsChangeNothing) {
  const int64_t v = 6000, d = 3;
  // Each list with its fault; the long ones put it past the first blocks,
  // and the last has two faults, of which the first must be reported.
  std::vector<std::vector<int64_t>> bad = {
      {5, 3}, {4, 4}, {1, v}, {-1, 2}, {0, 1, 2, 9000}};
  std::vector<int64_t> long_ids(5000);
  std::iota(long_ids.begin(), long_ids.end(), int64_t{0});
  long_ids[4321] = long_ids[4320];
  bad.push_back(long_ids);
  long_ids[4321] = 4321;
  long_ids[3000] = v + 7;  // out of range, then out of order at 3001
  long_ids[4500] = 2;
  bad.push_back(long_ids);

  for (const Case& c : AllOptimizers()) {
    SCOPED_TRACE(c.name);
    Pair p = MakePair(*c.opt, {v, d});
    // One good step first, so that the slots are not their initial values.
    SparseGrad good;
    good.ids = RandomIds(100, v);
    good.rows = RandomTensor({100, d}, rng_);
    SparseGrad gpu_good;
    gpu_good.ids = ToGpu(good.ids);
    gpu_good.rows = ToGpu(good.rows);
    ASSERT_TRUE(
        c.opt->ApplySparse(cpu(), &p.cpu_param, good, &p.cpu_state).ok());
    ASSERT_TRUE(
        c.opt->ApplySparse(gpu(), &p.gpu_param, gpu_good, &p.gpu_state).ok());
    const Tensor param_before = ToHost(p.gpu_param);
    std::vector<Tensor> slots_before;
    for (int s = 0; s < p.gpu_state.num_slots(); ++s) {
      slots_before.push_back(ToHost(p.gpu_state.slot(s)));
    }

    for (const std::vector<int64_t>& ids : bad) {
      SparseGrad grad;
      grad.ids = IdTensor::FromValues(ids);
      grad.rows = RandomTensor({grad.ids.size(), d}, rng_);
      SparseGrad gpu_grad;
      gpu_grad.ids = ToGpu(grad.ids);
      gpu_grad.rows = ToGpu(grad.rows);
      const Status expected =
          c.opt->ApplySparse(cpu(), &p.cpu_param, grad, &p.cpu_state);
      ASSERT_EQ(expected.code(), StatusCode::kInvalidArgument) << expected;
      const Status st =
          c.opt->ApplySparse(gpu(), &p.gpu_param, gpu_grad, &p.gpu_state);
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
      EXPECT_EQ(st.message(), expected.message());
      EXPECT_EQ(p.gpu_state.step(), 1);
      EXPECT_TRUE(BitwiseEqual(ToHost(p.gpu_param), param_before));
      for (int s = 0; s < p.gpu_state.num_slots(); ++s) {
        EXPECT_TRUE(BitwiseEqual(ToHost(p.gpu_state.slot(s)),
                                 slots_before[static_cast<size_t>(s)]))
            << p.gpu_state.slot_name(s);
      }
    }
    // The variable still takes good steps exactly as the CPU does.
    ASSERT_TRUE(
        c.opt->ApplySparse(cpu(), &p.cpu_param, good, &p.cpu_state).ok());
    ASSERT_TRUE(
        c.opt->ApplySparse(gpu(), &p.gpu_param, gpu_good, &p.gpu_state).ok());
    ExpectSame(p, c.name);
  }
}

TEST_F(CudaOptimizersTest, HostOperandsAreRefused) {
  for (const Case& c : AllOptimizers()) {
    SCOPED_TRACE(c.name);
    Pair p = MakePair(*c.opt, {20, 4});
    const Tensor before = ToHost(p.gpu_param);
    Tensor grad = RandomTensor({20, 4}, rng_);
    SparseGrad sparse;
    sparse.ids = RandomIds(5, 20);
    sparse.rows = RandomTensor({5, 4}, rng_);
    SparseGrad gpu_sparse;
    gpu_sparse.ids = ToGpu(sparse.ids);
    gpu_sparse.rows = ToGpu(sparse.rows);
    auto expect_refused = [&](const Status& st, OptimizerState* state,
                              const std::string& what) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << what << ": " << st;
      EXPECT_EQ(state->step(), 0) << what;
      EXPECT_TRUE(BitwiseEqual(ToHost(p.gpu_param), before)) << what;
    };

    expect_refused(c.opt->ApplyDense(gpu(), &p.gpu_param, grad, &p.gpu_state),
                   &p.gpu_state, "host gradient");
    SparseGrad host_ids;
    host_ids.ids = sparse.ids.Clone();
    host_ids.rows = ToGpu(sparse.rows);
    expect_refused(
        c.opt->ApplySparse(gpu(), &p.gpu_param, host_ids, &p.gpu_state),
        &p.gpu_state, "host ids");
    SparseGrad host_rows;
    host_rows.ids = ToGpu(sparse.ids);
    host_rows.rows = sparse.rows.Clone();
    expect_refused(
        c.opt->ApplySparse(gpu(), &p.gpu_param, host_rows, &p.gpu_state),
        &p.gpu_state, "host rows");

    // A state that was never moved: its slots are on the host.
    OptimizerState host_state = c.opt->CreateState(p.cpu_param.shape());
    if (host_state.num_slots() > 0) {
      expect_refused(
          c.opt->ApplyDense(gpu(), &p.gpu_param, ToGpu(grad), &host_state),
          &host_state, "host slots, dense");
      expect_refused(
          c.opt->ApplySparse(gpu(), &p.gpu_param, gpu_sparse, &host_state),
          &host_state, "host slots, sparse");
    }

    // A host param on a CUDA context.
    Tensor host_param = p.cpu_param.Clone();
    Status st =
        c.opt->ApplyDense(gpu(), &host_param, ToGpu(grad), &p.gpu_state);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(BitwiseEqual(host_param, p.cpu_param));
    EXPECT_EQ(p.gpu_state.step(), 0);
  }
}

TEST_F(CudaOptimizersTest, StateMovesToTheDeviceAndBack) {
  auto adam = *Adam::Create({.learning_rate = 0.1f});
  Tensor w = RandomTensor({9, 5}, rng_);
  OptimizerState state = adam->CreateState(w.shape());
  ASSERT_TRUE(
      adam->ApplyDense(cpu(), &w, RandomTensor({9, 5}, rng_), &state).ok());
  const Tensor m = state.slot(0).Clone();
  const Tensor v = state.slot(1).Clone();
  state.MoveTo(Memory::kDevice);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(state.slot(s).memory(), Memory::kDevice);
  }
  EXPECT_TRUE(BitwiseEqual(ToHost(state.slot(0)), m));
  EXPECT_TRUE(BitwiseEqual(ToHost(state.slot(1)), v));
  state.MoveTo(Memory::kHost);
  EXPECT_EQ(state.slot(0).memory(), Memory::kHost);
  EXPECT_TRUE(BitwiseEqual(state.slot(0), m));
  EXPECT_TRUE(BitwiseEqual(state.slot(1), v));
  EXPECT_EQ(state.step(), 1);
}

}  // namespace
}  // namespace dtf::kernels
