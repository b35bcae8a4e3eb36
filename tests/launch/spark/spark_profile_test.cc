#include "lib/launch/spark/spark_profile.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/profile.h"

namespace dtf::launch::spark {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  StatusOr<Profile> p = ParseProfile(text, "profiles/spark.toml", "spark");
  EXPECT_FALSE(p.ok()) << text;
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(p.status()));
}

TEST(SparkProfile, Defaults) {
  StatusOr<Profile> p = ParseProfile(
      "backend = \"spark\"\n[spark]\nmaster = \"spark://m1:7077\"\n",
      "profiles/spark.toml", "spark");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->backend, BackendKind::kSpark);
  const SparkProfile& s = SparkTableOf(*p);
  EXPECT_EQ(s.master, "spark://m1:7077");
  EXPECT_EQ(s.spark_submit, "spark-submit");
  EXPECT_EQ(s.deploy_mode, "client");
  EXPECT_EQ(s.executor_cores, 1);
  EXPECT_EQ(s.executor_memory, "1g");
  EXPECT_EQ(s.python, "python3");
  EXPECT_EQ(s.slot_wait, 60);
  EXPECT_TRUE(s.ship);
  EXPECT_EQ(s.run_dir, "");
  EXPECT_TRUE(s.conf.empty());
}

// A Spark profile names its tasks' S3 settings as every backend's may
// (its [s3] table was refused as an unknown key).
TEST(SparkProfile, TakesAnS3Table) {
  StatusOr<Profile> p = ParseProfile(
      "backend = \"spark\"\n[spark]\nmaster = \"spark://m1:7077\"\n"
      "[s3]\nendpoint = \"http://127.0.0.1:8333\"\nprofile = \"dtf\"\n",
      "profiles/spark.toml", "spark");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->s3.present);
  EXPECT_EQ(p->s3.endpoint, "http://127.0.0.1:8333");
  EXPECT_EQ(p->s3.profile, "dtf");
}

TEST(SparkProfile, ReadsEveryKey) {
  StatusOr<Profile> p =
      ParseProfile(R"(backend = "spark"
ps = 2
workers = 4
[spark]
master = "yarn"
spark_submit = "/opt/spark/bin/spark-submit"
deploy_mode = "client"
executor_cores = 4
executor_memory = "8g"
python = "/opt/py/bin/python3"
slot_wait = 120
ship = false
run_dir = "../runs"
conf = { "spark.yarn.queue" = "ml", "spark.executorEnv.A" = "b" }
)",
                   "/home/u/job/profiles/spark.toml", "spark");
  ASSERT_TRUE(p.ok()) << p.status();
  const SparkProfile& s = SparkTableOf(*p);
  EXPECT_EQ(p->ps, 2);
  EXPECT_EQ(p->workers, 4);
  EXPECT_EQ(s.master, "yarn");
  EXPECT_EQ(s.spark_submit, "/opt/spark/bin/spark-submit");
  EXPECT_EQ(s.executor_cores, 4);
  EXPECT_EQ(s.executor_memory, "8g");
  EXPECT_EQ(s.python, "/opt/py/bin/python3");
  EXPECT_EQ(s.slot_wait, 120);
  EXPECT_FALSE(s.ship);
  EXPECT_EQ(s.run_dir, "/home/u/job/runs");
  ASSERT_EQ(s.conf.size(), 2u);
  EXPECT_EQ(s.conf[0].first, "spark.yarn.queue");
  EXPECT_EQ(s.conf[1].second, "b");
}

TEST(SparkProfile, Errors) {
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n"),
              HasSubstr("needs a [spark] table with master"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nexecutor_cores = 2\n"),
              HasSubstr("spark.master: missing"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"mesos://x\"\n"),
              HasSubstr("profiles/spark.toml:3:10: spark.master: expected "
                        "\"spark://HOST:PORT\""));
  EXPECT_THAT(
      ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"spark://m1\"\n"),
      HasSubstr("spark.master: expected spark://HOST:PORT"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"yarn\"\n"
                      "deploy_mode = \"cluster\"\n"),
              HasSubstr("spark.deploy_mode: \"cluster\" is not supported"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"yarn\"\n"
                      "executor_cores = 0\n"),
              HasSubstr("spark.executor_cores"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"yarn\"\n"
                      "conf = { \"yarn.queue\" = \"ml\" }\n"),
              HasSubstr("starts with \"spark.\""));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\n[spark]\nmaster = \"yarn\"\n"
                      "masterr = \"x\"\n"),
              HasSubstr("spark.masterr: unknown key (did you mean master?)"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\nhosts = [\"h1\"]\n[spark]\n"
                      "master = \"yarn\"\n"),
              HasSubstr("not for backend = \"spark\" (Spark chooses the "
                        "executors"));
  EXPECT_THAT(ErrorOf("backend = \"spark\"\nbase_port = 9000\n[spark]\n"
                      "master = \"yarn\"\n"),
              HasSubstr("each task picks a free port"));
}

TEST(SparkProfile, StandaloneMaster) {
  auto m = StandaloneMaster("spark://m1.example:7077");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->first, "m1.example");
  EXPECT_EQ(m->second, 7077);
  m = StandaloneMaster("spark://m1:7077,m2:7077");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->first, "m1");
  EXPECT_FALSE(StandaloneMaster("yarn").has_value());
  EXPECT_FALSE(StandaloneMaster("spark://m1").has_value());
  EXPECT_FALSE(StandaloneMaster("spark://m1:99999").has_value());
}

TEST(SparkProfile, K8sStillNamesKubernetes) {
  // "k8s" comes after every backend's name in the choices.
  EXPECT_THAT(ErrorOf("backend = \"k8s\"\n"),
              HasSubstr("backend = \"kubernetes\" needs a [kubernetes] "
                        "table"));
}

}  // namespace
}  // namespace dtf::launch::spark
