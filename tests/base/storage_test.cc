// The storage seam against a real S3 server (SeaweedFS, started by the test
// set-up: tests/testing/s3_server.sh) and on local disk.
#include "lib/base/storage.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/s3_client.h"
#include "lib/base/s3_files.h"
#include "tests/testing/s3_bucket_test.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;
using testing::S3TestServer;
using testing::TempDir;

std::string Pattern(size_t n, int seed = 7) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>((i * 131 + seed * (i >> 12)) >> 3);
  }
  return s;
}

std::string NewBucketName() { return testing::UniqueBucketName("dtf-test"); }

class S3StorageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new S3TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_EQ(server_->error(), "");
    options_ = server_->options();
    options_.part_size = size_t{5} << 20;
    options_.read_chunk = size_t{256} << 10;
    ConfigureStorage(options_);
    bucket_ = NewBucketName();
    S3Client client(options_);
    {
      Status made = client.CreateBucket(bucket_);
      ASSERT_TRUE(made.ok()) << made;
    }
  }
  void TearDown() override { ConfigureStorage(S3Options{}); }

  std::string Path(const std::string& key) const {
    return absl::StrCat("s3://", bucket_, "/", key);
  }

  static S3TestServer* server_;
  S3Options options_;
  std::string bucket_;
};

S3TestServer* S3StorageTest::server_ = nullptr;

TEST_F(S3StorageTest, SmallObjectRoundTrip) {
  ASSERT_EQ(WriteWholeFile(Path("a/small.txt"), "hello, bucket\n"), OkStatus());
  StatusOr<std::string> read = ReadWholeFile(Path("a/small.txt"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "hello, bucket\n");
  StatusOr<FileInfo> info = StatFile(Path("a/small.txt"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 14u);
}

TEST_F(S3StorageTest, EmptyObject) {
  ASSERT_EQ(WriteWholeFile(Path("empty"), ""), OkStatus());
  StatusOr<std::string> read = ReadWholeFile(Path("empty"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
  auto file = OpenFileForRead(Path("empty"));
  ASSERT_TRUE(file.ok()) << file.status();
  char c;
  size_t got = 1;
  ASSERT_TRUE((*file)->Read(1, &c, &got).ok());
  EXPECT_EQ(got, 0u);
}

TEST_F(S3StorageTest, MultipartUploadAndReadAhead) {
  const std::string data = Pattern((size_t{12} << 20) + 12345);
  auto file = CreateFile(Path("big/object.bin"));
  ASSERT_TRUE(file.ok()) << file.status();
  for (size_t i = 0; i < data.size(); i += 1000003) {
    ASSERT_TRUE(
        (*file)->Append(std::string_view(data).substr(i, 1000003)).ok());
  }
  // Parts are uploaded as they fill; the object appears only at Close.
  EXPECT_FALSE(*FileExists(Path("big/object.bin")));
  ASSERT_TRUE((*file)->Close().ok());

  auto in = OpenFileForRead(Path("big/object.bin"));
  ASSERT_TRUE(in.ok()) << in.status();
  std::string back;
  std::vector<char> buffer(100000);
  while (true) {
    size_t got = 0;
    ASSERT_TRUE((*in)->Read(buffer.size(), buffer.data(), &got).ok());
    if (got == 0) break;
    back.append(buffer.data(), got);
  }
  EXPECT_EQ(back.size(), data.size());
  EXPECT_TRUE(back == data);

  auto random = OpenFileForRandomRead(Path("big/object.bin"));
  ASSERT_TRUE(random.ok()) << random.status();
  std::string part(1000, '\0');
  size_t got = 0;
  ASSERT_TRUE((*random)->Read(7000000, 1000, part.data(), &got).ok());
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(part, data.substr(7000000, 1000));
  ASSERT_TRUE((*random)->Read(data.size() - 10, 1000, part.data(), &got).ok());
  EXPECT_EQ(got, 10u);
  ASSERT_TRUE((*random)->Read(data.size() + 5, 10, part.data(), &got).ok());
  EXPECT_EQ(got, 0u);
}

TEST_F(S3StorageTest, ListGlobAndTree) {
  for (const char* key :
       {"d/part-0.tfrecord", "d/part-1.tfrecord", "d/part-1.tfrecord.index",
        "d/sub/part-2.tfrecord", "e/other"}) {
    ASSERT_EQ(WriteWholeFile(Path(key), key), OkStatus());
  }
  auto glob = ListFiles(Path("d/part-*.tfrecord"));
  ASSERT_TRUE(glob.ok()) << glob.status();
  ASSERT_EQ(glob->size(), 2u);
  EXPECT_EQ((*glob)[0].path, Path("d/part-0.tfrecord"));
  EXPECT_EQ((*glob)[1].path, Path("d/part-1.tfrecord"));
  EXPECT_EQ((*glob)[1].size, std::string("d/part-1.tfrecord").size());
  auto plain = ListFiles(Path("e/other"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->size(), 1u);
  auto none = ListFiles(Path("nothing-*"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto tree = ListTree(Path("d"));
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->size(), 4u);
}

TEST_F(S3StorageTest, KeyWithSpacesAndUnicode) {
  const std::string key = "dir with space/é ü 日本 +&=%.csv";
  ASSERT_EQ(WriteWholeFile(Path(key), "x,y\n1,2\n"), OkStatus());
  auto read = ReadWholeFile(Path(key));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "x,y\n1,2\n");
  auto listed = ListFiles(Path("dir with space/*.csv"));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].path, Path(key));
  ASSERT_TRUE(RenameFile(Path(key), Path("moved/ß 2.csv")).ok());
  EXPECT_FALSE(*FileExists(Path(key)));
  EXPECT_EQ(*ReadWholeFile(Path("moved/ß 2.csv")), "x,y\n1,2\n");
  ASSERT_TRUE(RemoveFile(Path("moved/ß 2.csv")).ok());
  EXPECT_FALSE(*FileExists(Path("moved/ß 2.csv")));
}

TEST_F(S3StorageTest, MissingKeyNamesBucketAndKey) {
  auto read = ReadWholeFile(Path("no/such.key"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(Message(read.status())),
              HasSubstr("no such key \"no/such.key\""));
  EXPECT_THAT(std::string(Message(read.status())), HasSubstr(bucket_));
  auto open = OpenFileForRead(Path("no/such.key"));
  EXPECT_EQ(open.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(S3StorageTest, MissingBucket) {
  const std::string path = "s3://dtf-no-such-bucket/data/train.csv";
  auto read = ReadWholeFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(Message(read.status())),
              HasSubstr("no such bucket \"dtf-no-such-bucket\""));
  auto list = ListFiles("s3://dtf-no-such-bucket/data/*.csv");
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(std::string(Message(list.status())),
              HasSubstr("no such bucket \"dtf-no-such-bucket\""));
  EXPECT_THAT(std::string(Message(list.status())), HasSubstr("NoSuchBucket"));
  // (SeaweedFS makes a missing bucket on an admin's PUT, so writes are not
  // checked here.)
}

TEST_F(S3StorageTest, WrongCredentialsSayAccessDenied) {
  ASSERT_EQ(WriteWholeFile(Path("k"), "v"), OkStatus());
  S3Options wrong = options_;
  wrong.secret_access_key = "not-the-secret";
  ConfigureStorage(wrong);
  auto read = ReadWholeFile(Path("k"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kPermissionDenied);
  const std::string message(Message(read.status()));
  EXPECT_THAT(message, HasSubstr(absl::StrCat("access denied to bucket \"",
                                              bucket_, "\"")));
  auto list = ListFiles(Path("*"));
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(std::string(Message(list.status())),
              HasSubstr("SignatureDoesNotMatch"));
  wrong.access_key_id = "no-such-key-id";
  ConfigureStorage(wrong);
  auto write = WriteWholeFile(Path("k2"), "v");
  EXPECT_EQ(write.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(Message(write)), HasSubstr("access denied"));
}

TEST_F(S3StorageTest, ReadOnlyIdentityCannotWrite) {
  S3Options reader = options_;
  reader.access_key_id = "dtf-readonly";
  reader.secret_access_key = "dtf-readonly-secret";
  ASSERT_EQ(WriteWholeFile(Path("shared.txt"), "v"), OkStatus());
  ConfigureStorage(reader);
  EXPECT_EQ(*ReadWholeFile(Path("shared.txt")), "v");
  Status write = WriteWholeFile(Path("new.txt"), "v");
  EXPECT_EQ(write.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(Message(write)), HasSubstr("s3://" + bucket_));
}

TEST_F(S3StorageTest, BadPathsAreRefused) {
  EXPECT_EQ(ReadWholeFile("s3://").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(Message(ReadWholeFile("s3://Bad_Bucket!/k").status())),
      HasSubstr("bucket name"));
  EXPECT_EQ(CreateFile(Path("dir/")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The server is killed while a multipart upload is under way: Close fails
// naming the key, retries having been made, and no object (whole or
// partial) is left, while an object written earlier is still there.
TEST(S3Faults, ServerStoppedMidUploadLeavesNoObject) {
  S3TestServer server(/*own=*/true);
  ASSERT_EQ(server.error(), "");
  S3Options options = server.options();
  options.part_size = size_t{5} << 20;
  options.max_attempts = 2;
  ConfigureStorage(options);
  S3Client client(options);
  ASSERT_TRUE(client.CreateBucket("faults").ok());
  ASSERT_EQ(WriteWholeFile("s3://faults/before", "kept"), OkStatus());
  ASSERT_EQ(WriteWholeFile("s3://faults/big", "the old object"), OkStatus());

  const std::string data = Pattern(size_t{11} << 20);
  auto file = CreateFile("s3://faults/big");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(std::string_view(data).substr(0, 6 << 20)).ok());
  server.Stop();
  Status appended = (*file)->Append(std::string_view(data).substr(6 << 20));
  Status closed = (*file)->Close();
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(Message(closed)), HasSubstr("s3://faults/big"));
  EXPECT_THAT(std::string(Message(closed)), HasSubstr("after 2 attempts"));
  (void)appended;

  ASSERT_TRUE(server.Restart());
  // A server just started may answer 500 a while: retried.
  options.max_attempts = 8;
  options.max_backoff_ms = 2000;
  ConfigureStorage(options);
  StatusOr<std::string> before = ReadWholeFile("s3://faults/before");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, "kept");
  StatusOr<std::string> big = ReadWholeFile("s3://faults/big");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(*big, "the old object");
  ConfigureStorage(S3Options{});
}

// A writer dropped without Close() leaves nothing behind.
TEST(S3Faults, WriterDroppedWithoutCloseLeavesNoObject) {
  S3TestServer server;
  ASSERT_EQ(server.error(), "");
  S3Options options = server.options();
  options.part_size = size_t{5} << 20;
  ConfigureStorage(options);
  const std::string bucket = NewBucketName();
  ASSERT_TRUE(S3Client(options).CreateBucket(bucket).ok());
  const std::string path = absl::StrCat("s3://", bucket, "/dropped");
  {
    auto file = CreateFile(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append(Pattern(6 << 20)).ok());
  }
  EXPECT_FALSE(*FileExists(path));
  ConfigureStorage(S3Options{});
}

TEST(LocalStorage, CreateFileAppearsAtClose) {
  TempDir dir;
  const std::string path = dir.Join("sub/out.txt");
  {
    auto file = CreateFile(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Append("partial").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(dir.List(), std::vector<std::string>{"sub"});
  auto file = CreateFile(path);
  ASSERT_TRUE((*file)->Append("whole").ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*ReadWholeFile(path), "whole");
  EXPECT_EQ(std::filesystem::directory_iterator(dir.Join("sub"))->path(), path);
}

TEST(LocalStorage, ListAndStat) {
  TempDir dir;
  ASSERT_EQ(WriteWholeFile(dir.Join("a-1.rec"), "1"), OkStatus());
  ASSERT_EQ(WriteWholeFile(dir.Join("a-2.rec"), "22"), OkStatus());
  std::filesystem::create_directories(dir.Join("x/y"));
  ASSERT_EQ(WriteWholeFile(dir.Join("x/y/z"), "333"), OkStatus());
  auto listed = ListFiles(dir.Join("a-*.rec"));
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[1].size, 2u);
  auto tree = ListTree(dir.path());
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(tree->size(), 3u);
  EXPECT_EQ(StatFile(dir.Join("x/y/z"))->size, 3u);
  EXPECT_EQ(StatFile(dir.Join("none")).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(RenameFile(dir.Join("x/y/z"), dir.Join("z")).ok());
  EXPECT_TRUE(*FileExists(dir.Join("z")));
  ASSERT_TRUE(RemoveFile(dir.Join("z")).ok());
  ASSERT_TRUE(RemoveFile(dir.Join("z")).ok());
  EXPECT_FALSE(*FileExists(dir.Join("z")));
}

}  // namespace
}  // namespace dtf
