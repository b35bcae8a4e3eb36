// The S3 settings and credentials a launcher resolves for its tasks, the
// file they travel in, and what a task makes of it.
#include "cmd/task_storage.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/storage.h"
#include "lib/launch/profile.h"
#include "tests/testing/temp_dir.h"

namespace dtf::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class TaskStorageTest : public ::testing::Test {
 protected:
  GetEnv Env() {
    env_["HOME"] = home_.path();
    return [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
  }
  launch::Profile Profile(const std::string& text) {
    StatusOr<launch::Profile> p =
        launch::ParseProfile(text, "profiles/p.toml", "p");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : launch::Profile{};
  }
  void WriteAws(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(home_.Join(".aws"));
    testing::WriteFile(home_.Join(".aws/" + name), text);
  }

  testing::TempDir home_{"dtf_task_storage"};
  std::map<std::string, std::string> env_;
};

TEST_F(TaskStorageTest, TheLaunchersSettingsReachTheTaskWhole) {
  env_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:8333";
  env_["AWS_REGION"] = "us-east-1";
  env_["AWS_ACCESS_KEY_ID"] = "AKID";
  env_["AWS_SECRET_ACCESS_KEY"] = "SECRET";
  env_["AWS_SESSION_TOKEN"] = "TOKEN";
  const launch::Profile profile = Profile("");
  StatusOr<S3Options> launcher = LauncherS3Options(profile, Env());
  ASSERT_TRUE(launcher.ok()) << launcher.status();
  std::vector<std::string> names;
  const std::string text = TaskS3FileText(*launcher, profile.s3, &names);
  EXPECT_THAT(names, ElementsAre("AWS_ENDPOINT_URL", "AWS_REGION",
                                 "DTF_S3_PATH_STYLE", "AWS_ACCESS_KEY_ID",
                                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"));
  // The task's own environment has other settings, which the file's win
  // over; it has no credentials of its own.
  env_.clear();
  env_["AWS_ENDPOINT_URL_S3"] = "http://elsewhere:1";
  env_["AWS_DEFAULT_REGION"] = "ap-south-1";
  StatusOr<S3Options> task = TaskS3Options(text, "s3-credentials", Env());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->endpoint, "http://127.0.0.1:8333");
  EXPECT_EQ(task->region, "us-east-1");
  EXPECT_TRUE(task->path_style);
  EXPECT_EQ(task->access_key_id, "AKID");
  EXPECT_EQ(task->secret_access_key, "SECRET");
  EXPECT_EQ(task->session_token, "TOKEN");
}

TEST_F(TaskStorageTest, TheFilesKeyComesWithItsOwnSecretAndToken) {
  const std::string text =
      "# comment\nAWS_REGION=eu-west-1\nAWS_ENDPOINT_URL=\n"
      "DTF_S3_PATH_STYLE=false\nAWS_ACCESS_KEY_ID=FILEKEY\n"
      "AWS_SECRET_ACCESS_KEY=FILESECRET\n";
  env_["AWS_ACCESS_KEY_ID"] = "HOSTKEY";
  env_["AWS_SECRET_ACCESS_KEY"] = "HOSTSECRET";
  env_["AWS_SESSION_TOKEN"] = "HOSTTOKEN";
  StatusOr<S3Options> task = TaskS3Options(text, "f", Env());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->access_key_id, "FILEKEY");
  EXPECT_EQ(task->secret_access_key, "FILESECRET");
  EXPECT_EQ(task->session_token, "");  // not the host's
  EXPECT_EQ(task->endpoint, "");       // AWS
  EXPECT_FALSE(task->path_style);
  EXPECT_EQ(task->region, "eu-west-1");
}

TEST_F(TaskStorageTest, CredentialsTasksLeavesThemToTheTasksHost) {
  env_["AWS_ACCESS_KEY_ID"] = "AKID";
  env_["AWS_SECRET_ACCESS_KEY"] = "SECRET";
  const launch::Profile profile = Profile(
      "[s3]\nendpoint = \"http://minio:9000\"\nregion = \"eu-west-1\"\n"
      "profile = \"training\"\ncredentials = \"tasks\"\n");
  WriteAws("credentials",
           "[training]\naws_access_key_id = LAUNCHER\n"
           "aws_secret_access_key = L\n");
  StatusOr<S3Options> launcher = LauncherS3Options(profile, Env());
  ASSERT_TRUE(launcher.ok()) << launcher.status();
  // The profile's AWS profile gives the launcher's credentials, whatever
  // the environment's keys; the profile's endpoint and region win.
  EXPECT_EQ(launcher->access_key_id, "LAUNCHER");
  EXPECT_EQ(launcher->endpoint, "http://minio:9000");
  EXPECT_EQ(launcher->region, "eu-west-1");
  std::vector<std::string> names;
  const std::string text = TaskS3FileText(*launcher, profile.s3, &names);
  EXPECT_THAT(names, ElementsAre("AWS_ENDPOINT_URL", "AWS_REGION",
                                 "DTF_S3_PATH_STYLE", "AWS_PROFILE"));
  EXPECT_THAT(text, Not(HasSubstr("LAUNCHER")));
  EXPECT_THAT(text, Not(HasSubstr("SECRET")));
  // On the task's host: its own ~/.aws profile of that name.
  env_.clear();
  WriteAws("credentials",
           "[training]\naws_access_key_id = TASKHOST\n"
           "aws_secret_access_key = T\n");
  StatusOr<S3Options> task = TaskS3Options(text, "f", Env());
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->access_key_id, "TASKHOST");
  EXPECT_EQ(task->endpoint, "http://minio:9000");
}

TEST_F(TaskStorageTest, ErrorsNameTheFileAndTheProfileKey) {
  StatusOr<S3Options> task =
      TaskS3Options("AWS_REGION=x\nHOME=/root\n", "/r/s3-credentials", Env());
  ASSERT_FALSE(task.ok());
  EXPECT_THAT(Message(task.status()),
              HasSubstr("/r/s3-credentials:2: expected NAME=value"));
  const launch::Profile profile = Profile("[s3]\nprofile = \"nope\"\n");
  StatusOr<S3Options> launcher = LauncherS3Options(profile, Env());
  ASSERT_FALSE(launcher.ok());
  EXPECT_THAT(Message(launcher.status()),
              HasSubstr("profiles/p.toml:2:11: s3.profile: AWS_PROFILE=nope: "
                        "no profile [nope]"));
}

TEST_F(TaskStorageTest, TheFileMustBePrivate) {
  const std::string path = home_.Join("s3-credentials");
  testing::WriteFile(path, "AWS_REGION=us-east-1\n");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Status s = ConfigureStorageFromTaskFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s), HasSubstr(path));
  EXPECT_THAT(Message(s), HasSubstr("mode 0644"));
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(ConfigureStorageFromTaskFile(path).ok());
  ConfigureStorage(S3Options{});
}

}  // namespace
}  // namespace dtf::cli
