// StorageMirror and the tree copies against a real S3 server (the fixture's
// SeaweedFS, tests/testing/s3_server.sh).
#include "lib/base/storage_mirror.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/s3_client.h"
#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "tests/testing/s3_bucket_test.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class StorageMirrorTest : public testing::S3BucketTest {
 protected:
  StorageMirrorTest() : S3BucketTest("dtf-mirror") {}
  std::vector<std::string> Keys(const std::string& prefix) const {
    std::vector<std::string> keys;
    auto listed = ListTree(Url(prefix));
    if (!listed.ok()) return {std::string(Message(listed.status()))};
    for (const FileInfo& f : *listed) {
      keys.push_back(f.path.substr(Url("").size()));
    }
    return keys;
  }
};

TEST_F(StorageMirrorTest, DownloadsSyncsAndRemoves) {
  ASSERT_EQ(WriteWholeFile(Url("run/old.dtf"), "old"), OkStatus());
  ASSERT_EQ(WriteWholeFile(Url("run/model/model.toml"), "m"), OkStatus());
  auto mirror = StorageMirror::Open(Url("run"), {"checkpoint.dtf"});
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  const std::string local = (*mirror)->local_dir();
  EXPECT_EQ(*ReadWholeFile(local + "/old.dtf"), "old");
  EXPECT_EQ(*ReadWholeFile(local + "/model/model.toml"), "m");

  ASSERT_EQ(WriteWholeFile(local + "/checkpoint-100.dtf", "c100"), OkStatus());
  ASSERT_EQ(WriteWholeFile(local + "/checkpoint.dtf", "-> 100"), OkStatus());
  ASSERT_EQ(WriteWholeFile(local + "/.checkpoint.dtf.tmp", "partial"),
            OkStatus());
  fs::remove(local + "/old.dtf");
  ASSERT_EQ((*mirror)->Sync(), OkStatus());
  EXPECT_THAT(Keys("run"),
              ElementsAre("run/checkpoint-100.dtf", "run/checkpoint.dtf",
                          "run/model/model.toml"));
  EXPECT_EQ(*ReadWholeFile(Url("run/checkpoint.dtf")), "-> 100");

  // What did not change is not uploaded again; what changed is.
  ASSERT_EQ(WriteWholeFile(Url("run/model/model.toml"), "remote edit"),
            OkStatus());
  ASSERT_EQ(WriteWholeFile(local + "/checkpoint.dtf", "-> 200"), OkStatus());
  ASSERT_EQ((*mirror)->Sync(), OkStatus());
  EXPECT_EQ(*ReadWholeFile(Url("run/model/model.toml")), "remote edit");
  EXPECT_EQ(*ReadWholeFile(Url("run/checkpoint.dtf")), "-> 200");
  fs::path gone = local;
  mirror->reset();
  EXPECT_FALSE(fs::exists(gone));
}

TEST_F(StorageMirrorTest, SyncEveryUploadsInTheBackground) {
  auto mirror = StorageMirror::Open(Url("bg"));
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  (*mirror)->SyncEvery(std::chrono::milliseconds(50));
  ASSERT_EQ(WriteWholeFile((*mirror)->local_dir() + "/events", "e"),
            OkStatus());
  for (int i = 0; i < 200 && Keys("bg").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_THAT(Keys("bg"), ElementsAre("bg/events"));
  EXPECT_EQ((*mirror)->last_error(), OkStatus());
}

TEST_F(StorageMirrorTest, UploadAndDownloadTrees) {
  testing::TempDir dir;
  fs::create_directories(dir.Join("a/b"));
  ASSERT_EQ(WriteWholeFile(dir.Join("a/b/x.index"), "i"), OkStatus());
  ASSERT_EQ(WriteWholeFile(dir.Join("a/b/x"), "x"), OkStatus());
  ASSERT_EQ(WriteWholeFile(dir.Join("top"), "t"), OkStatus());
  auto up = UploadTree(dir.path(), Url("tree"));
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_THAT(*up, ElementsAre("a/b/x", "a/b/x.index", "top"));
  testing::TempDir back;
  auto down = DownloadTree(Url("tree"), back.Join("copy"));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_THAT(*down, ElementsAre("a/b/x", "a/b/x.index", "top"));
  EXPECT_EQ(*ReadWholeFile(back.Join("copy/a/b/x.index")), "i");
}

TEST_F(StorageMirrorTest, MissingBucketFailsOpen) {
  auto mirror = StorageMirror::Open("s3://dtf-no-such-bucket/run");
  ASSERT_FALSE(mirror.ok());
  EXPECT_THAT(std::string(Message(mirror.status())),
              ::testing::HasSubstr("no such bucket \"dtf-no-such-bucket\""));
}

}  // namespace
}  // namespace dtf
