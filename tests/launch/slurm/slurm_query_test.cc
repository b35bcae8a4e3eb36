#include "lib/launch/slurm/slurm_query.h"

#include <string>

#include "gtest/gtest.h"

namespace dtf::launch::slurm {
namespace {

TEST(SlurmQuery, SbatchParsable) {
  EXPECT_EQ(*ParseSbatchJobId("1234\n"), "1234");
  EXPECT_EQ(*ParseSbatchJobId("1234;cluster-a\n"), "1234");
  // A warning sbatch printed first is not the id.
  EXPECT_EQ(*ParseSbatchJobId("sbatch: warning: something\n77\n"), "77");
  StatusOr<std::string> bad =
      ParseSbatchJobId("sbatch: error: Batch job submission failed\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(Message(bad.status())).find("not a job id"),
            std::string::npos);
  EXPECT_FALSE(ParseSbatchJobId("").ok());
  EXPECT_FALSE(ParseSbatchJobId("12a\n").ok());
}

TEST(SlurmQuery, SqueueState) {
  EXPECT_EQ(ParseSqueueState("RUNNING\n")->value(), "RUNNING");
  EXPECT_EQ(ParseSqueueState("  PENDING \n")->value(), "PENDING");
  EXPECT_EQ(ParseSqueueState("COMPLETING\n")->value(), "COMPLETING");
  // Gone from the queue: no line.
  EXPECT_FALSE(ParseSqueueState("")->has_value());
  EXPECT_FALSE(ParseSqueueState("\n")->has_value());
  EXPECT_FALSE(ParseSqueueState("slurm_load_jobs error: x\n").ok());
}

TEST(SlurmQuery, ScontrolJobState) {
  const char* show =
      "JobId=12 JobName=dtf-r1\n"
      "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
      "   Priority=1 Nice=0 Account=(null) QOS=(null)\n"
      "   JobState=CANCELLED Reason=None Dependency=(null)\n";
  EXPECT_EQ(ParseScontrolJobState(show).value(), "CANCELLED");
  EXPECT_EQ(
      ParseScontrolJobState("JobId=3 JobState=COMPLETED Reason=None").value(),
      "COMPLETED");
  // Not a key of its own.
  EXPECT_FALSE(ParseScontrolJobState("XJobState=RUNNING").has_value());
  EXPECT_FALSE(
      ParseScontrolJobState("slurm_load_jobs error: Invalid job id specified")
          .has_value());
}

TEST(SlurmQuery, SacctJobState) {
  const char* out = "12|CANCELLED by 0\n12.batch|CANCELLED\n12.0|COMPLETED\n";
  EXPECT_EQ(ParseSacctJobState(out, "12").value(), "CANCELLED");
  EXPECT_EQ(ParseSacctJobState(out, "12.0").value(), "COMPLETED");
  EXPECT_FALSE(ParseSacctJobState(out, "13").has_value());
  EXPECT_FALSE(ParseSacctJobState("", "12").has_value());
}

TEST(SlurmQuery, StepId) {
  const char* out = "40.0 interactive\n40.1 dtf-r7\n40.extern extern\n";
  EXPECT_EQ(ParseStepId(out, "dtf-r7").value(), "40.1");
  EXPECT_FALSE(ParseStepId(out, "dtf-r8").has_value());
  EXPECT_FALSE(ParseStepId("", "dtf-r7").has_value());
}

TEST(SlurmQuery, FinalStates) {
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                        "NODE_FAIL", "OUT_OF_MEMORY"}) {
    EXPECT_TRUE(SlurmStateFinal(s)) << s;
  }
  for (const char* s :
       {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", ""}) {
    EXPECT_FALSE(SlurmStateFinal(s)) << s;
  }
}

}  // namespace
}  // namespace dtf::launch::slurm

namespace dtf::launch::slurm {
namespace {

TEST(SlurmQuery, TimeSeconds) {
  EXPECT_EQ(**SlurmTimeSeconds("30"), 1800);
  EXPECT_EQ(**SlurmTimeSeconds("30:15"), 1815);
  EXPECT_EQ(**SlurmTimeSeconds("01:00:00"), 3600);
  EXPECT_EQ(**SlurmTimeSeconds("1-00:00:00"), 86400);
  EXPECT_EQ(**SlurmTimeSeconds("2-3"), 2 * 86400 + 3 * 3600);
  EXPECT_EQ(**SlurmTimeSeconds("1-02:30"), 86400 + 2 * 3600 + 30 * 60);
  EXPECT_FALSE(SlurmTimeSeconds("UNLIMITED")->has_value());
  EXPECT_FALSE(SlurmTimeSeconds("infinite")->has_value());
  EXPECT_FALSE(SlurmTimeSeconds("1:2:3:4").ok());
  EXPECT_FALSE(SlurmTimeSeconds("soon").ok());
  EXPECT_FALSE(SlurmTimeSeconds("").ok());
}

TEST(SlurmQuery, SinfoPartitions) {
  StatusOr<std::vector<SinfoPartition>> p = ParseSinfoPartitions(
      "debug*|1:00:00|1|up\ngpu|infinite|4|up\ngpu|infinite|2|up\n"
      "old|30:00|0|down\n");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].name, "debug");
  EXPECT_TRUE((*p)[0].is_default);
  EXPECT_EQ((*p)[0].max_seconds.value(), 3600);
  EXPECT_EQ((*p)[1].name, "gpu");
  EXPECT_EQ((*p)[1].nodes, 6);
  EXPECT_FALSE((*p)[1].max_seconds.has_value());
  EXPECT_FALSE((*p)[2].up);
  EXPECT_FALSE(ParseSinfoPartitions("debug up\n").ok());
}

}  // namespace
}  // namespace dtf::launch::slurm
