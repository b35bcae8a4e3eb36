// The S3 settings read from the AWS environment and ~/.aws files.
#include "cmd/storage_env.h"

#include <filesystem>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace dtf::cli {
namespace {

using ::testing::HasSubstr;

class StorageEnvTest : public ::testing::Test {
 protected:
  StatusOr<S3Options> Read() {
    env_["HOME"] = home_.path();
    return S3OptionsFromEnvironment([this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }
  void WriteAws(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(home_.Join(".aws"));
    testing::WriteFile(home_.Join(".aws/" + name), text);
  }

  testing::TempDir home_{"dtf_aws_home"};
  std::map<std::string, std::string> env_;
};

TEST_F(StorageEnvTest, DefaultsAreAwsAnonymous) {
  auto o = Read();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->endpoint, "");
  EXPECT_EQ(o->region, "us-east-1");
  EXPECT_EQ(o->access_key_id, "");
  EXPECT_FALSE(o->path_style);
}

TEST_F(StorageEnvTest, EnvironmentVariables) {
  env_ = {{"AWS_ACCESS_KEY_ID", "AKID"},
          {"AWS_SECRET_ACCESS_KEY", "SECRET"},
          {"AWS_SESSION_TOKEN", "TOKEN"},
          {"AWS_DEFAULT_REGION", "eu-west-1"},
          {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"}};
  auto o = Read();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->access_key_id, "AKID");
  EXPECT_EQ(o->secret_access_key, "SECRET");
  EXPECT_EQ(o->session_token, "TOKEN");
  EXPECT_EQ(o->region, "eu-west-1");
  EXPECT_EQ(o->endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(o->path_style);
  env_["AWS_REGION"] = "ap-south-1";
  env_["AWS_ENDPOINT_URL_S3"] = "https://s3.example";
  o = Read();
  EXPECT_EQ(o->region, "ap-south-1");
  EXPECT_EQ(o->endpoint, "https://s3.example");
}

TEST_F(StorageEnvTest, TensorFlowEndpoint) {
  env_ = {{"S3_ENDPOINT", "minio.local:9000"}, {"S3_USE_HTTPS", "0"}};
  EXPECT_EQ(Read()->endpoint, "http://minio.local:9000");
  env_.erase("S3_USE_HTTPS");
  EXPECT_EQ(Read()->endpoint, "https://minio.local:9000");
}

TEST_F(StorageEnvTest, ProfileFromCredentialsAndConfig) {
  WriteAws("credentials",
           "[default]\naws_access_key_id = DEF\naws_secret_access_key = D\n"
           "[lab]\naws_access_key_id = LAB\naws_secret_access_key = L \n"
           "aws_session_token=T\n");
  WriteAws("config",
           "[default]\nregion = us-west-2\n"
           "[profile lab]\nregion = eu-central-1\n"
           "endpoint_url = http://10.0.0.5:8333\n");
  auto o = Read();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->access_key_id, "DEF");
  EXPECT_EQ(o->region, "us-west-2");
  env_["AWS_PROFILE"] = "lab";
  o = Read();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->access_key_id, "LAB");
  EXPECT_EQ(o->secret_access_key, "L");
  EXPECT_EQ(o->session_token, "T");
  EXPECT_EQ(o->region, "eu-central-1");
  EXPECT_EQ(o->endpoint, "http://10.0.0.5:8333");
  EXPECT_TRUE(o->path_style);
  // The environment's keys win over the profile's.
  env_["AWS_ACCESS_KEY_ID"] = "ENV";
  env_["AWS_SECRET_ACCESS_KEY"] = "E";
  EXPECT_EQ(Read()->access_key_id, "ENV");
}

TEST_F(StorageEnvTest, MissingProfileNamesItAndTheFiles) {
  env_["AWS_PROFILE"] = "nope";
  auto o = Read();
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(std::string(Message(o.status())),
              HasSubstr("AWS_PROFILE=nope: no profile [nope] in"));
  EXPECT_THAT(std::string(Message(o.status())), HasSubstr(".aws/credentials"));
}

TEST_F(StorageEnvTest, KeyWithoutSecretIsRefused) {
  env_["AWS_ACCESS_KEY_ID"] = "AKID";
  auto o = Read();
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(std::string(Message(o.status())),
              HasSubstr("AKID has no secret"));
}

}  // namespace
}  // namespace dtf::cli
