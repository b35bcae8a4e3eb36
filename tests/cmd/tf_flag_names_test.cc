// dtf serve takes TensorFlow's flag names (--ps_hosts, --worker_hosts,
// --job_name, --task_index) as its own, and dtf train takes --set.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code = -1;
  std::string err;
};

class TfFlagNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dtf::testing::WriteFile(temp_.Join("secret"),
                            "0123456789abcdef0123456789abcdef");
    ASSERT_EQ(::chmod(temp_.Join("secret").c_str(), 0600), 0);
  }
  Result Run(const std::string& args) {
    std::string cmd = "cd '";
    cmd.append(temp_.path()).append("' && '").append(DTF_BINARY);
    cmd.append("' ").append(args).append(" >out.txt 2>err.txt");
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = dtf::testing::ReadFile(temp_.Join("err.txt"));
    return r;
  }
  dtf::testing::TempDir temp_{"dtf_tf_flags"};
};

TEST_F(TfFlagNamesTest, ServeTakesTensorFlowNames) {
  // Parsed and resolved into the cluster: the task named is checked.
  Result r = Run(
      "serve --job_name ps --task_index 3 --ps_hosts 127.0.0.1:1 "
      "--worker_hosts 127.0.0.1:2,127.0.0.1:3 --run-id r --secret-file secret");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, Not(HasSubstr("unknown")));
  EXPECT_THAT(r.err, HasSubstr("task ps:3 is not in the cluster, which has 1 "
                               "ps task (ps:0)"));
  // The = form, as TensorFlow's examples write it.
  r = Run(
      "serve --job_name=worker --task_index=1 --ps_hosts=127.0.0.1:1 "
      "--worker_hosts=127.0.0.1:2,127.0.0.1:3 --run-id r --secret-file secret "
      "--job missing.toml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.toml"));
}

TEST_F(TfFlagNamesTest, TrainTakesSet) {
  std::string args = "train --job ";
  args.append(DTF_SOURCE_DIR);
  args.append("/examples/census/dtf.toml --set train.batch_size=-5");
  Result r = Run(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("train.batch_size: must be at least 1, got -5"));
}

}  // namespace
