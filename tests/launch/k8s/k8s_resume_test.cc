// dtf launch --resume of a Kubernetes run, as far as it goes without a
// cluster: how a run's Job stands, what is refused, the dry run's
// commands. (The resume itself runs in e2e_k8s_resume.)
#include "lib/launch/k8s/k8s_resume.h"

#include <filesystem>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::k8s {
namespace {

using ::testing::HasSubstr;

std::string JobWith(const std::string& conditions) {
  return StrCat(R"({"kind": "List", "items": [{"kind": "Job", "status": )",
                R"({"conditions": [)", conditions, "]}}]}");
}

TEST(WorkloadState, FromTheJobsConditions) {
  EXPECT_EQ(*WorkloadStateOf(R"({"items": []})"), WorkloadState::kGone);
  EXPECT_EQ(*WorkloadStateOf(JobWith("")), WorkloadState::kActive);
  EXPECT_EQ(
      *WorkloadStateOf(JobWith(R"({"type": "Complete", "status": "True"})")),
      WorkloadState::kSucceeded);
  EXPECT_EQ(
      *WorkloadStateOf(JobWith(R"({"type": "Failed", "status": "True"})")),
      WorkloadState::kFailed);
  // A condition that does not hold says nothing.
  EXPECT_EQ(
      *WorkloadStateOf(JobWith(R"({"type": "Failed", "status": "False"})")),
      WorkloadState::kActive);
  // A TFJob's.
  EXPECT_EQ(*WorkloadStateOf(JobWith(R"({"type": "Running", "status": "True"},
                                        {"type": "Succeeded", "status": "True"})")),
            WorkloadState::kSucceeded);
  for (const char* bad : {"", "[]", R"({"items": 3})", R"({"items": [1]})"}) {
    EXPECT_EQ(WorkloadStateOf(bad).status().code(), StatusCode::kDataLoss)
        << bad;
  }
}

class ResumeTest : public ::testing::Test {
 protected:
  // A run directory as dtf launch --profile k8s leaves it.
  std::string RunDir(std::optional<bool> training,
                     std::optional<bool> output_kept) {
    RunRecordFacts facts;
    facts.training = training;
    facts.output_kept = output_kept;
    const std::string run = StrCat(dir_.path(), "/runs/r1");
    std::filesystem::create_directories(StrCat(run, "/kubernetes"));
    KubernetesProfile p;
    p.ns = "ml";
    EXPECT_TRUE(WriteFileAtomically(StrCat(run, "/", kRunRecordName),
                                    RunRecordJson("r1", p, facts))
                    .ok());
    EXPECT_TRUE(
        WriteFileAtomically(StrCat(run, "/kubernetes/job.yaml"), "kind: Job\n")
            .ok());
    return run;
  }
  HandOffOptions how_;
  dtf::testing::TempDir dir_{"dtf_k8s_resume_test"};
};

TEST_F(ResumeTest, DryRunPrintsTheCommands) {
  how_.dry_run = true;
  const std::string run = RunDir(true, true);
  StatusOr<std::string> out = ResumeKubernetesRun(run, how_);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, StrCat("kubectl --namespace=ml get jobs.batch "
                         "--selector=dtf.dev/run-id=r1 --output=json\n"
                         "kubectl --namespace=ml delete "
                         "jobs.batch,services,configmaps,secrets "
                         "--selector=dtf.dev/run-id=r1 --ignore-not-found\n"
                         "kubectl --namespace=ml apply --filename ",
                         run, "/kubernetes\n"));
}

TEST_F(ResumeTest, RefusesRunsWithNothingToResume) {
  how_.dry_run = true;
  StatusOr<std::string> out = ResumeKubernetesRun(RunDir(true, false), how_);
  ASSERT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(out.status())),
              HasSubstr("run r1: its pods wrote train.output_dir where "
                        "nothing outlives them"));
  out = ResumeKubernetesRun(RunDir(false, std::nullopt), how_);
  ASSERT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(out.status())),
              HasSubstr("is a scoring run (dtf predict)"));
  const std::string run = RunDir(true, true);
  std::filesystem::remove_all(StrCat(run, "/kubernetes"));
  out = ResumeKubernetesRun(run, how_);
  ASSERT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(out.status())),
              HasSubstr("no recorded objects"));
}

}  // namespace
}  // namespace dtf::launch::k8s
