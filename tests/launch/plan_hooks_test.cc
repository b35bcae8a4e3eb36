#include "lib/launch/plan_hooks.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/backend_part.h"
#include "lib/launch/run_registry.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

// What the shared code asks of each backend, answered by the backend's own
// hooks: where the tasks are, where their files are, whether a run is
// handed off.
TEST(PlanHooksTest, EachBackendAnswersForItself) {
  const PlanHooks& local = PlanHooksOf(BackendKind::kLocal);
  EXPECT_TRUE(local.TasksHere());
  EXPECT_FALSE(local.FilesOnHosts());
  EXPECT_FALSE(local.HandsOff());
  EXPECT_TRUE(local.AddressesPlanned());

  const PlanHooks& ssh = PlanHooksOf(BackendKind::kSsh);
  EXPECT_FALSE(ssh.TasksHere());
  EXPECT_TRUE(ssh.FilesOnHosts());
  EXPECT_FALSE(ssh.HandsOff());

  const PlanHooks& slurm = PlanHooksOf(BackendKind::kSlurm);
  EXPECT_FALSE(slurm.TasksHere());
  EXPECT_FALSE(slurm.FilesOnHosts());
  EXPECT_FALSE(slurm.AddressesPlanned());

  EXPECT_TRUE(PlanHooksOf(BackendKind::kKubernetes).HandsOff());
}

TEST(PlanHooksTest, PlanAsksTheHooksOfItsBackend) {
  Plan plan;
  plan.backend = BackendKind::kSsh;
  TaskPlan task;
  task.role = Role::kWorker;
  task.index = 1;
  task.host = "h1";
  EXPECT_EQ(plan.hooks().TaskLabel(task), "h1 worker:1");
  plan.backend = BackendKind::kLocal;
  EXPECT_EQ(plan.hooks().TaskLabel(task), "worker:1");
  // Certificates name their host, or under Slurm their task.
  EXPECT_EQ(plan.hooks().TlsNameOf(plan, task), "h1");
  plan.backend = BackendKind::kSlurm;
  EXPECT_EQ(plan.hooks().TlsNameOf(plan, task), "worker-1");
}

struct OwnPart {
  int value = 0;
};

TEST(BackendPartTest, HoldsOneBackendsValue) {
  BackendPart part;
  EXPECT_TRUE(part.empty());
  EXPECT_EQ(part.Get<OwnPart>(), nullptr);
  part.Mutable<OwnPart>().value = 7;
  ASSERT_NE(part.Get<OwnPart>(), nullptr);
  EXPECT_EQ(part.Get<OwnPart>()->value, 7);
  // Another type's value is not this one's.
  EXPECT_EQ(part.Get<int>(), nullptr);
  BackendPart copy = part;
  copy.Mutable<OwnPart>().value = 8;
  EXPECT_EQ(part.Get<OwnPart>()->value, 7);
}

// A backend's record fields are tasks.json's top-level text keys beside
// the shared ones, and read back as they were written.
TEST(RunRecordTest, KeepsTheBackendsFields) {
  testing::TempDir dir;
  RunRecord r;
  r.run_id = "r1";
  r.message = "m";
  r.backend["engine_job"] = "job 7";
  ASSERT_TRUE(WriteRunRecord(dir.path(), r).ok());
  StatusOr<RunRecord> back = ReadRunRecord(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->backend.size(), 1u);
  EXPECT_EQ(back->backend.at("engine_job"), "job 7");
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->message, "m");
}

}  // namespace
}  // namespace dtf::launch
