// Session's SFTP members against a real OpenSSH server (the remote files
// live in the test's temporary directory on this machine).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "lib/base/strings.h"
#include "lib/launch/ssh/session.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch::ssh::testing {
namespace {

using ::testing::HasSubstr;

int Mode(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777)
                                      : -1;
}

std::string RandomBytes(size_t size) {
  std::mt19937_64 random(42);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(random());
  return out;
}

class SftpTest : public SshdTest {
 protected:
  void SetUp() override {
    SshdTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    session_ = Connect();
    ASSERT_NE(session_, nullptr);
    root_ = dir_.Join("remote");
  }
  std::unique_ptr<Session> session_;
  std::string root_;
};

TEST_F(SftpTest, MakeDirsExistsWriteFileAndRead) {
  std::string deep = root_ + "/a/b/c";
  ASSERT_TRUE(session_->MakeDirs(deep, 0750).ok());
  EXPECT_EQ(Mode(deep), 0750);
  EXPECT_EQ(Mode(root_ + "/a"), 0750);
  ASSERT_TRUE(session_->MakeDirs(deep, 0750).ok());  // already there
  EXPECT_EQ(session_->Exists(deep).value_or(false), true);
  EXPECT_EQ(session_->Exists(root_ + "/nothing").value_or(true), false);

  std::string path = deep + "/hello.txt";
  ASSERT_TRUE(session_->WriteFile(path, "hello world", 0640).ok());
  EXPECT_EQ(Mode(path), 0640);
  EXPECT_EQ(dtf::testing::ReadFile(path), "hello world");
  ASSERT_TRUE(session_->WriteFile(path, "replaced", 0600).ok());
  EXPECT_EQ(dtf::testing::ReadFile(path), "replaced");
  EXPECT_EQ(Mode(path), 0600);
  // No temporary file left behind.
  auto listing =
      session_->Exec(StrCat("ls -A ", deep), std::chrono::seconds(10));
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->out, "hello.txt\n");

  auto data = session_->ReadFile(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->value_or(""), "replaced");
  EXPECT_EQ(session_->ReadAt(path, 2, 3)->value_or(""), "pla");
  EXPECT_EQ(session_->ReadAt(path, 8, 10)->value_or("x"), "");
  EXPECT_EQ(session_->ReadAt(path, 100, 10)->value_or("x"), "");
  auto missing = session_->ReadAt(deep + "/missing", 0, 10);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
  missing = session_->ReadFile(deep + "/missing");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(session_->ReadFile(path, 3).status().code(),
            StatusCode::kOutOfRange);
}

TEST_F(SftpTest, MakeDirsOverAFileFails) {
  ASSERT_TRUE(session_->MakeDirs(root_).ok());
  ASSERT_TRUE(session_->WriteFile(root_ + "/file", "x", 0644).ok());
  Status status = session_->MakeDirs(root_ + "/file/sub");
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status;
}

TEST_F(SftpTest, RenameReplacesTheTarget) {
  ASSERT_TRUE(session_->MakeDirs(root_).ok());
  ASSERT_TRUE(session_->WriteFile(root_ + "/from", "new", 0644).ok());
  ASSERT_TRUE(session_->WriteFile(root_ + "/to", "old", 0644).ok());
  ASSERT_TRUE(session_->Rename(root_ + "/from", root_ + "/to").ok());
  EXPECT_EQ(dtf::testing::ReadFile(root_ + "/to"), "new");
  EXPECT_FALSE(session_->Exists(root_ + "/from").value_or(true));
  Status status = session_->Rename(root_ + "/from", root_ + "/to");
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status;
}

TEST_F(SftpTest, ErrorsNameHostAndPath) {
  std::string path = "/nonexistent-dir-for-dtf/file";
  Status status = session_->WriteFile(path, "x", 0644);
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status;
  EXPECT_THAT(Message(status), HasSubstr(sshd_->target().Label()));
  EXPECT_THAT(Message(status), HasSubstr(path));
}

TEST_F(SftpTest, UploadCopiesTheFile) {
  std::string local = dir_.Join("local.bin");
  std::string bytes = RandomBytes((3 << 20) + 12345);
  dtf::testing::WriteFile(local, bytes);
  ASSERT_TRUE(session_->MakeDirs(root_).ok());
  std::string remote = root_ + "/uploaded.bin";
  ASSERT_TRUE(session_->Upload(local, remote, 0755).ok());
  EXPECT_EQ(Mode(remote), 0755);
  EXPECT_TRUE(dtf::testing::ReadFile(remote) == bytes);
  auto back = session_->ReadFile(remote, 8 << 20);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->value_or("") == bytes);
  // Then the session still works for plain SFTP calls and commands.
  ASSERT_TRUE(session_->WriteFile(root_ + "/small", "s", 0644).ok());
  EXPECT_TRUE(session_->Exec("true", std::chrono::seconds(10)).ok());

  Status status = session_->Upload(dir_.Join("no-such-file"), remote, 0644);
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status;
}

// A file of many upload windows arrives whole. (Upload rates are
// bench/launch's: the runtime shipped to every host.)
TEST_F(SftpTest, UploadCopiesALargeFile) {
  constexpr size_t kSize = 50 << 20;
  std::string local = dir_.Join("big.bin");
  const std::string bytes = RandomBytes(kSize);
  dtf::testing::WriteFile(local, bytes);
  ASSERT_TRUE(session_->MakeDirs(root_).ok());
  std::string remote = root_ + "/big.bin";
  ASSERT_TRUE(session_->Upload(local, remote, 0644).ok());
  struct stat st;
  ASSERT_EQ(stat(remote.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), kSize);
  EXPECT_TRUE(dtf::testing::ReadFile(remote) == bytes)
      << "the uploaded bytes differ";
}

}  // namespace
}  // namespace dtf::launch::ssh::testing
