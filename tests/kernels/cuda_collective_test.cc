// The NCCL collective (nccl.h) on one GPU: one rank's collectives,
// and a join that a peer never makes ending by the timeout or a cancel
// rather than waiting for ever. Skipped without a CUDA device or NCCL.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/kernels/nccl.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class CudaCollectiveTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    testing::CudaTest::SetUp();
    if (IsSkipped()) return;
    StatusOr<std::string> id = NewNcclId();
    if (!id.ok()) GTEST_SKIP() << "NCCL is not usable: " << id.status();
    id_ = *std::move(id);
  }

  static CollectiveLimits Limits(std::chrono::milliseconds timeout) {
    CollectiveLimits limits;
    limits.timeout = timeout;
    limits.timeout_name = "the test's timeout";
    return limits;
  }

  std::string id_;
};

TEST_F(CudaCollectiveTest, OneRankAveragesTakesTheMinimumAndBroadcasts) {
  StatusOr<std::unique_ptr<Collective>> comm =
      JoinNccl(gpu(), id_, 0, 1, Limits(60s));
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->rank(), 0);
  EXPECT_EQ((*comm)->size(), 1);
  Tensor t = ToGpu(Tensor::FromValues({3}, {1.5f, -2.0f, 7.0f}));
  Status st = (*comm)->AllReduceMean(&t);
  ASSERT_TRUE(st.ok()) << st;
  Tensor back = ToHost(t);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
  EXPECT_EQ(back[2], 7.0f);
  float value = 4.25f;
  st = (*comm)->AllReduceMin(&value);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(value, 4.25f);
  st = (*comm)->Broadcast(&t, 0);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(ToHost(t)[2], 7.0f);
  StatusOr<std::vector<std::string>> all = (*comm)->AllGather("abcde");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, ::testing::ElementsAre("abcde"));
  st = (*comm)->Barrier();
  ASSERT_TRUE(st.ok()) << st;
}

// Rank 1 of 2 never joins: rank 0 gives up after the timeout, having
// aborted its communicator.
TEST_F(CudaCollectiveTest, AJoinThatAPeerNeverMakesEndsAtTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Collective>> comm =
      JoinNccl(gpu(), id_, 0, 2, Limits(3s));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kDeadlineExceeded)
      << comm.status();
  EXPECT_THAT(std::string(Message(comm.status())),
              HasSubstr("ncclCommInitRankConfig on rank 0 of 2: not done "
                        "within 3 s (the test's timeout)"));
  EXPECT_GE(took, 3s);
  EXPECT_LT(took, 60s);
}

TEST_F(CudaCollectiveTest, ACancelEndsAJoinThatAPeerNeverMakes) {
  std::atomic<bool> cancel{true};
  CollectiveLimits limits = Limits(600s);
  limits.cancel = &cancel;
  limits.cancel_grace = 500ms;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Collective>> comm =
      JoinNccl(gpu(), id_, 0, 2, limits);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kCancelled) << comm.status();
  EXPECT_THAT(std::string(Message(comm.status())),
              HasSubstr("ncclCommInitRankConfig on rank 0 of 2: cancelled"));
  EXPECT_LT(took, 60s);
}

}  // namespace
}  // namespace dtf::kernels
