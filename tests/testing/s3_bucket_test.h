// A test suite on the shared S3 server (s3_server.h): each test has dtf's
// storage pointed at the server (ConfigureStorage) and a fresh bucket of
// its own (UniqueBucketName); Url("key") is "s3://<bucket>/key".
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "lib/base/s3_client.h"
#include "lib/base/storage.h"
#include "tests/testing/s3_server.h"

namespace dtf::testing {

// `<prefix>-<pid>-<random>-<n>`: unique on a server that outlives many test
// processes (a process id is reused; the buckets of the process that had
// it before are still there).
inline std::string UniqueBucketName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  static const uint32_t random = std::random_device{}();
  return absl::StrCat(prefix, "-", ::getpid(), "-", absl::Hex(random), "-",
                      counter++);
}

class S3BucketTest : public ::testing::Test {
 protected:
  explicit S3BucketTest(std::string prefix) : prefix_(std::move(prefix)) {}

  static void SetUpTestSuite() { server_ = new S3TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(server_->error(), "");
    ConfigureStorage(server_->options());
    bucket_ = UniqueBucketName(prefix_);
    ASSERT_TRUE(S3Client(server_->options()).CreateBucket(bucket_).ok());
  }
  void TearDown() override { ConfigureStorage(S3Options{}); }

  std::string Url(const std::string& key) const {
    return absl::StrCat("s3://", bucket_, "/", key);
  }

  inline static S3TestServer* server_ = nullptr;
  std::string bucket_;

 private:
  std::string prefix_;
};

}  // namespace dtf::testing
