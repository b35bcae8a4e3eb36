// Behaviour every optimizer shares: lazy sparse updates, argument checks
// that leave everything untouched, and thread-count independence.
#include "lib/kernels/optimizer.h"

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/kernels/adagrad.h"
#include "lib/kernels/adam.h"
#include "lib/kernels/ftrl.h"
#include "lib/kernels/sgd.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

using testing::RandomTensor;

std::vector<std::unique_ptr<Optimizer>> AllOptimizers() {
  std::vector<std::unique_ptr<Optimizer>> out;
  out.push_back(*Sgd::Create({.learning_rate = 0.1f}));
  out.push_back(*Sgd::Create({.learning_rate = 0.1f, .momentum = 0.9f}));
  out.push_back(*Adagrad::Create({.learning_rate = 0.1f}));
  out.push_back(*Adam::Create({.learning_rate = 0.1f}));
  out.push_back(*Ftrl::Create({.learning_rate = 0.1f,
                               .l1_regularization_strength = 0.01f,
                               .l2_regularization_strength = 0.01f}));
  return out;
}

bool Equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Rows of a [V x D] table without a gradient keep their values and slots;
// the others move exactly as a dense update of just those rows would.
TEST(Optimizer, SparseUpdatesAreLazy) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(1);
  for (const auto& opt : AllOptimizers()) {
    SCOPED_TRACE(std::string(opt->name()));
    Tensor table = RandomTensor({5, 2}, rng);
    const Tensor before = table.Clone();
    OptimizerState state = opt->CreateState(table.shape());
    const Tensor slot_before =
        state.num_slots() > 0 ? state.slot(0).Clone() : Tensor();
    SparseGrad grad;
    grad.ids = IdTensor::FromValues({1, 3});
    grad.rows = RandomTensor({2, 2}, rng);

    Tensor touched = Tensor::Empty({2, 2});
    for (int k = 0; k < 2; ++k) {
      touched[k] = table[2 + k];
      touched[2 + k] = table[6 + k];
    }
    OptimizerState dense_state = opt->CreateState(touched.shape());
    ASSERT_TRUE(opt->ApplyDense(ctx, &touched, grad.rows, &dense_state).ok());
    ASSERT_TRUE(opt->ApplySparse(ctx, &table, grad, &state).ok());

    for (int64_t row : {0, 2, 4}) {
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(table[row * 2 + k], before[row * 2 + k]) << row;
        for (int s = 0; s < state.num_slots(); ++s) {
          EXPECT_EQ(state.slot(s)[row * 2 + k],
                    s == 0 ? slot_before[row * 2 + k] : 0.0f)
              << row;
        }
      }
    }
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(table[2 + k], touched[k]);
      EXPECT_EQ(table[6 + k], touched[2 + k]);
      EXPECT_NE(table[2 + k], before[2 + k]);
    }
  }
}

TEST(Optimizer, BadArgumentsChangeNothing) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(2);
  auto sgd = *Sgd::Create({});
  for (const auto& opt : AllOptimizers()) {
    SCOPED_TRACE(std::string(opt->name()));
    Tensor w = RandomTensor({4, 3}, rng);
    const Tensor before = w.Clone();
    OptimizerState state = opt->CreateState(w.shape());
    auto expect_rejected = [&](const Status& s, const std::string& what) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s;
      EXPECT_TRUE(Equal(w, before)) << what;
      EXPECT_EQ(state.step(), 0) << what;
    };
    expect_rejected(opt->ApplyDense(ctx, &w, RandomTensor({3, 4}, rng), &state),
                    "transposed gradient");
    OptimizerState other_shape = opt->CreateState(std::vector<int64_t>{4, 2});
    expect_rejected(
        opt->ApplyDense(ctx, &w, RandomTensor({4, 3}, rng), &other_shape),
        "state for another shape");
    OptimizerState foreign = opt->name() == "Adam"
                                 ? (*Ftrl::Create({}))->CreateState(w.shape())
                                 : (*Adam::Create({}))->CreateState(w.shape());
    expect_rejected(
        opt->ApplyDense(ctx, &w, RandomTensor({4, 3}, rng), &foreign),
        "state of another optimizer");
    OptimizerState none;
    expect_rejected(opt->ApplyDense(ctx, &w, RandomTensor({4, 3}, rng), &none),
                    "empty state");

    SparseGrad grad;
    grad.rows = RandomTensor({2, 3}, rng);
    grad.ids = IdTensor::FromValues({2, 1});
    expect_rejected(opt->ApplySparse(ctx, &w, grad, &state), "unsorted ids");
    grad.ids = IdTensor::FromValues({1, 1});
    expect_rejected(opt->ApplySparse(ctx, &w, grad, &state), "repeated ids");
    grad.ids = IdTensor::FromValues({1, 4});
    expect_rejected(opt->ApplySparse(ctx, &w, grad, &state), "id out of range");
    grad.ids = IdTensor::FromValues({0, 1});
    grad.rows = RandomTensor({2, 2}, rng);
    expect_rejected(opt->ApplySparse(ctx, &w, grad, &state), "narrow rows");
  }
}

TEST(Optimizer, OneAndFourThreadsGiveIdenticalResults) {
  std::mt19937 rng(3);
  Context one = Context::Cpu(1);
  Context four = Context::Cpu(4);
  Tensor grad = RandomTensor({1024, 1024}, rng);
  SparseGrad sparse;
  sparse.ids = IdTensor::Empty(8000);
  for (int64_t i = 0; i < 8000; ++i) sparse.ids[i] = 3 * i;
  sparse.rows = RandomTensor({8000, 64}, rng);
  Tensor table = RandomTensor({24000, 64}, rng);
  for (const auto& opt : AllOptimizers()) {
    SCOPED_TRACE(std::string(opt->name()));
    Tensor w1 = RandomTensor({1024, 1024}, rng);
    Tensor w4 = w1.Clone();
    OptimizerState s1 = opt->CreateState(w1.shape());
    OptimizerState s4 = opt->CreateState(w4.shape());
    Tensor t1 = table.Clone();
    Tensor t4 = table.Clone();
    OptimizerState ts1 = opt->CreateState(t1.shape());
    OptimizerState ts4 = opt->CreateState(t4.shape());
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(opt->ApplyDense(one, &w1, grad, &s1).ok());
      ASSERT_TRUE(opt->ApplyDense(four, &w4, grad, &s4).ok());
      ASSERT_TRUE(opt->ApplySparse(one, &t1, sparse, &ts1).ok());
      ASSERT_TRUE(opt->ApplySparse(four, &t4, sparse, &ts4).ok());
    }
    EXPECT_TRUE(Equal(w1, w4));
    EXPECT_TRUE(Equal(t1, t4));
    for (int s = 0; s < s1.num_slots(); ++s) {
      EXPECT_TRUE(Equal(s1.slot(s), s4.slot(s)));
      EXPECT_TRUE(Equal(ts1.slot(s), ts4.slot(s)));
    }
  }
}

// Moving a state to where its slots already are keeps them, values and
// storage; a CUDA worker moves its states to Memory::kDevice the same way
// (tests/kernels/cuda_optimizers_test.cc).
TEST(Optimizer, MoveToHostKeepsHostSlots) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(4);
  for (const auto& opt : AllOptimizers()) {
    SCOPED_TRACE(std::string(opt->name()));
    Tensor w = RandomTensor({6, 3}, rng);
    OptimizerState state = opt->CreateState(w.shape());
    ASSERT_TRUE(
        opt->ApplyDense(ctx, &w, RandomTensor({6, 3}, rng), &state).ok());
    std::vector<Tensor> before;
    std::vector<const float*> storage;
    for (int s = 0; s < state.num_slots(); ++s) {
      before.push_back(state.slot(s).Clone());
      storage.push_back(state.slot(s).data());
    }
    state.MoveTo(Memory::kHost);
    ASSERT_EQ(state.num_slots(), static_cast<int>(before.size()));
    for (int s = 0; s < state.num_slots(); ++s) {
      const size_t i = static_cast<size_t>(s);
      EXPECT_EQ(state.slot(s).memory(), Memory::kHost);
      EXPECT_EQ(state.slot(s).data(), storage[i]);
      EXPECT_TRUE(Equal(state.slot(s), before[i]));
    }
    EXPECT_EQ(state.step(), 1);
    // The moved state keeps working.
    ASSERT_TRUE(
        opt->ApplyDense(ctx, &w, RandomTensor({6, 3}, rng), &state).ok());
    EXPECT_EQ(state.step(), 2);
  }
}

TEST(Optimizer, LearningRateCanChange) {
  for (const auto& opt : AllOptimizers()) {
    opt->set_learning_rate(0.25f);
    EXPECT_FLOAT_EQ(opt->learning_rate(), 0.25f);
  }
}

}  // namespace
}  // namespace dtf::kernels
