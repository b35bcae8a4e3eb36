// `dtf task spark` and `dtf task slurm`: what each task of a Spark or
// Slurm run does before its dtf serve starts.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A task whose host cannot reach the job's bucket (nothing listens at the
// run's endpoint) fails before its dtf serve starts: its exit record says
// failed, its stderr names the host, the bucket and the endpoint, and no
// serve ever wrote a ready file.
TEST(TaskSpark, HostThatCannotReachTheBucketFailsFirst) {
  dtf::testing::TempDir dir("dtf_task_test");
  const std::string job = dir.Join("dtf.toml");
  const std::string census =
      dtf::testing::ReadFile(DTF_SOURCE_DIR "/examples/census/dtf.toml");
  std::string text;
  for (size_t pos = 0; pos < census.size();) {
    size_t end = census.find('\n', pos);
    if (end == std::string::npos) end = census.size();
    std::string line = census.substr(pos, end - pos);
    if (line.starts_with("records = ")) {
      line = "records = \"s3://unreachable-bucket/records\"";
    }
    text.append(line).append("\n");
    pos = end + 1;
  }
  dtf::testing::WriteFile(job, text);
  const std::string run = dir.Join("runs/r1");
  fs::create_directories(run);
  // Port 1 on loopback: refused at once.
  ASSERT_TRUE(dtf::WriteFileAtomically(
                  run + "/s3-credentials",
                  "AWS_ENDPOINT_URL=http://127.0.0.1:1\nAWS_REGION=us-east-1\n"
                  "DTF_S3_PATH_STYLE=true\nAWS_ACCESS_KEY_ID=AKID\n"
                  "AWS_SECRET_ACCESS_KEY=SECRET\n")
                  .ok());
  fs::permissions(run + "/s3-credentials",
                  fs::perms::owner_read | fs::perms::owner_write);
  std::string cmd = "'" DTF_BINARY "' task spark --job '";
  cmd.append(job).append("' --run-dir '").append(run);
  cmd.append(
      "' --run-id r1 --ps 0 --workers 1 --task-id 0 --addresses "
      "127.0.0.1:45000 --s3 >'");
  cmd.append(dir.Join("out.txt")).append("' 2>'");
  cmd.append(dir.Join("err.txt")).append("'");
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0)
      << dtf::testing::ReadFile(dir.Join("err.txt"));
  const std::string exit = dtf::testing::ReadFile(run + "/worker-0/exit.json");
  EXPECT_THAT(exit, HasSubstr("\"failed\""));
  const std::string err = dtf::testing::ReadFile(run + "/worker-0/stderr");
  EXPECT_THAT(err, HasSubstr("worker:0 on 127.0.0.1"));
  EXPECT_THAT(err, HasSubstr("unreachable-bucket"));
  EXPECT_THAT(err, HasSubstr("preflight from"));
  EXPECT_EQ(dtf::testing::ReadFile(run + "/worker-0/node"), "127.0.0.1\n");
  EXPECT_FALSE(fs::exists(run + "/worker-0/ready"));
}

}  // namespace
