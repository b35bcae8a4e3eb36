// Where a Kubernetes run's pods write train.output_dir, and the warning
// when that is lost with them (lib/launch/k8s/job_output.h).
#include "lib/launch/k8s/job_output.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::launch::k8s {
namespace {

using ::testing::HasSubstr;

TEST(JobOutput, OutputDirAsThePodsSeeIt) {
  KubernetesProfile p;
  p.job_dir = "/job";
  EXPECT_EQ(PodOutputDir("[data]\ncsv = [\"a.csv\"]\n", {}, p), "/job/out");
  EXPECT_EQ(PodOutputDir("[train]\noutput_dir = \"./runs/../x\"\n", {}, p),
            "/job/x");
  EXPECT_EQ(PodOutputDir("[train]\noutput_dir = \"/out/census\"\n", {}, p),
            "/out/census");
  // --set wins, the last one; as TOML or as plain text.
  EXPECT_EQ(PodOutputDir("[train]\noutput_dir = \"a\"\n",
                         {"train.output_dir=\"/out/b\"", "train.steps=3"}, p),
            "/out/b");
  EXPECT_EQ(PodOutputDir("", {"train.output_dir=/out/c"}, p), "/out/c");
  // A bucket is the same from every pod, not a path under the job.
  EXPECT_EQ(PodOutputDir("[train]\noutput_dir = \"s3://census/out\"\n", {}, p),
            "s3://census/out");
  EXPECT_EQ(PodOutputDir("", {"train.output_dir=s3://b/run"}, p), "s3://b/run");
  // A job that does not parse: the default (dtf serve names its error).
  EXPECT_EQ(PodOutputDir("[train\n", {}, p), "/job/out");
}

TEST(JobOutput, ABucketOutlivesThePods) {
  KubernetesProfile p;
  EXPECT_EQ(LostOutputWarning("s3://census/out", p), "");
}

TEST(JobOutput, OnlyTheOutputVolumeOutlivesThePods) {
  KubernetesProfile p;
  EXPECT_THAT(LostOutputWarning("/job/out", p),
              HasSubstr("the pods write train.output_dir (/job/out) where "
                        "nothing outlives them: the run's checkpoints and "
                        "exported model are lost"));
  p.output.kind = DataVolume::Kind::kPvc;
  p.output.source = "dtf-out";
  p.output.mount_path = "/out";
  p.where["kubernetes.output"] = "profiles/k8s.toml:9:10";
  EXPECT_EQ(LostOutputWarning("/out", p), "");
  EXPECT_EQ(LostOutputWarning("/out/census", p), "");
  EXPECT_THAT(LostOutputWarning("/outside/census", p),
              HasSubstr("not on kubernetes.output (mounted at /out, "
                        "profiles/k8s.toml:9:10)"));
}

}  // namespace
}  // namespace dtf::launch::k8s
