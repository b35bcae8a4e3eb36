// dtf serve --index-from-env VAR: the task from a variable holding its
// place in --ps then --workers (a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX), and its errors.
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

struct ServeResult {
  int code = -1;
  std::string err;
};

class ServeIndexEnvTest : public ::testing::Test {
 protected:
  ServeResult Serve(const std::string& env, const std::string& args) {
    const std::string cmd = "cd '" + temp_.path() + "' && env " + env + " '" +
                            DTF_BINARY +
                            "' serve --job dtf.toml --run-id r1 "
                            "--secret-file secret --ps 127.0.0.1:1 "
                            "--workers 127.0.0.1:2,127.0.0.1:3 " +
                            args + " >out.txt 2>err.txt </dev/null";
    const int status = std::system(cmd.c_str());
    ServeResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = dtf::testing::ReadFile(temp_.Join("err.txt"));
    return r;
  }
  dtf::testing::TempDir temp_{"dtf_serve_index_env_test"};
};

TEST_F(ServeIndexEnvTest, BadOrMissingIndexIsAUsageError) {
  ServeResult r =
      Serve("-u JOB_COMPLETION_INDEX", "--index-from-env JOB_COMPLETION_INDEX");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--index-from-env JOB_COMPLETION_INDEX: the "
                               "variable is not set"));
  for (const char* bad : {"3", "-1", "x", "1x", ""}) {
    r = Serve(std::string("JOB_COMPLETION_INDEX=") + bad,
              "--index-from-env JOB_COMPLETION_INDEX");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("expected an index from 0 to 2 (ps first, "
                                 "then workers), got \"" +
                                 std::string(bad) + "\""))
        << bad;
  }
  r = Serve("JOB_COMPLETION_INDEX=0",
            "--index-from-env JOB_COMPLETION_INDEX --role ps");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("excludes"));
}

// A valid index passes the cluster checks and reaches the job file (absent
// here): the index named a task of the cluster.
TEST_F(ServeIndexEnvTest, ValidIndexPicksATask) {
  for (const char* index : {"0", "1", "2"}) {
    ServeResult r = Serve(std::string("JOB_COMPLETION_INDEX=") + index,
                          "--index-from-env JOB_COMPLETION_INDEX");
    EXPECT_NE(r.code, 0);
    EXPECT_THAT(r.err, Not(HasSubstr("--index-from-env"))) << index;
    EXPECT_THAT(r.err, HasSubstr("secret")) << index << ": " << r.err;
  }
}

}  // namespace
