#include "lib/base/file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

using testing::TempDir;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131) >> 3);
  return s;
}

TEST(StringFile, ReadsBackWhatWasWritten) {
  std::string contents;
  auto out = NewStringWritableFile(&contents, "mem");
  ASSERT_TRUE(out->Append("hello ").ok());
  ASSERT_TRUE(out->Append("world").ok());
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(contents, "hello world");
  EXPECT_EQ(out->Append("x").code(), StatusCode::kFailedPrecondition);

  auto in = NewStringSequentialFile(contents, "mem-in");
  EXPECT_EQ(in->name(), "mem-in");
  char buf[4];
  size_t got = 0;
  std::string read;
  do {
    ASSERT_TRUE(in->Read(sizeof(buf), buf, &got).ok());
    read.append(buf, got);
  } while (got > 0);
  EXPECT_EQ(read, "hello world");
}

TEST(SequentialFile, MissingFileIsNotFoundNamingThePath) {
  TempDir dir;
  const std::string path = dir.path() + "/missing.tfrecord";
  auto file = OpenSequentialFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr(path));

  auto contents = ReadFileToString(path);
  EXPECT_EQ(contents.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(contents.status().message(), HasSubstr(path));
}

TEST(SequentialFile, DashIsStandardInput) {
  auto file = OpenSequentialFile("-");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->name(), "<stdin>");
}

TEST(SequentialFile, DirectoryFailsOnRead) {
  TempDir dir;
  auto contents = ReadFileToString(dir.path());
  ASSERT_FALSE(contents.ok());
  EXPECT_THAT(contents.status().message(), HasSubstr(dir.path()));
}

TEST(WritableFile, RoundTripsSmallAndLargeAppends) {
  TempDir dir;
  const std::string path = dir.path() + "/data.bin";
  auto file = OpenWritableFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->name(), path);
  std::string expected;
  // Small appends that fill the buffer, one larger than the buffer, and
  // appends that straddle its end.
  for (size_t n : {size_t{1}, size_t{1000}, size_t{700000}, size_t{3} << 20,
                   size_t{600000}, size_t{5}, size_t{1} << 20}) {
    std::string chunk = Pattern(n);
    ASSERT_TRUE((*file)->Append(chunk).ok());
    expected += chunk;
  }
  ASSERT_TRUE((*file)->Flush().ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("tail").ok());
  expected += "tail";
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE((*file)->Close().ok());

  auto contents = ReadFileToString(path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->size(), expected.size());
  EXPECT_TRUE(*contents == expected);
}

TEST(WritableFile, AppendAfterCloseFails) {
  TempDir dir;
  auto file = OpenWritableFile(dir.path() + "/x");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Close().ok());
  Status status = (*file)->Append("late");
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(dir.path() + "/x"));
}

TEST(WritableFile, DevFullIsResourceExhaustedNamingThePath) {
  auto file = OpenWritableFile("/dev/full");
  if (!file.ok()) GTEST_SKIP() << file.status();
  // Buffered: the failure shows when the bytes reach the OS.
  ASSERT_TRUE((*file)->Append("some bytes").ok());
  Status status = (*file)->Close();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("/dev/full"));
}

TEST(WritableFile, DevFullFailsAtOnceForLargeAppendsAndStaysFailed) {
  auto file = OpenWritableFile("/dev/full");
  if (!file.ok()) GTEST_SKIP() << file.status();
  Status status = (*file)->Append(Pattern(size_t{2} << 20));
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("/dev/full"));
  EXPECT_EQ((*file)->Append("x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*file)->Close().code(), StatusCode::kResourceExhausted);
}

TEST(WritableFile, MissingDirectoryIsNotFound) {
  TempDir dir;
  const std::string path = dir.path() + "/no/such/dir/out.tfrecord";
  auto file = OpenWritableFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr(path));
}

TEST(WritableFile, PrivateFileIsOwnerOnly) {
  TempDir dir;
  const std::string path = dir.path() + "/secret";
  auto file = OpenWritableFile(path, /*private_file=*/true);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Close().ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(WritableFile, TruncatesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.path() + "/t";
  ASSERT_TRUE(WriteFileAtomically(path, "a long first version").ok());
  auto file = OpenWritableFile(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("short").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*ReadFileToString(path), "short");
}

TEST(ReadFileToString, ReadsLargeAndEmptyFiles) {
  TempDir dir;
  const std::string big = Pattern((size_t{5} << 20) + 17);
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/big", big).ok());
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/empty", "").ok());
  auto contents = ReadFileToString(dir.path() + "/big");
  ASSERT_TRUE(contents.ok());
  EXPECT_TRUE(*contents == big);
  contents = ReadFileToString(dir.path() + "/empty");
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "");
}

TEST(WriteFileAtomically, CreatesAndReplacesWithoutLeavingTempFiles) {
  TempDir dir;
  const std::string path = dir.path() + "/checkpoint.json";
  ASSERT_TRUE(WriteFileAtomically(path, "version 1").ok());
  EXPECT_EQ(*ReadFileToString(path), "version 1");
  ASSERT_TRUE(WriteFileAtomically(path, "version 2, longer").ok());
  EXPECT_EQ(*ReadFileToString(path), "version 2, longer");
  EXPECT_THAT(dir.List(), ::testing::ElementsAre("checkpoint.json"));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(WriteFileAtomically, MissingDirectoryNamesThePath) {
  TempDir dir;
  const std::string path = dir.path() + "/absent/out.json";
  Status status = WriteFileAtomically(path, "x");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(WriteFileAtomically, RelativePathUsesCurrentDirectory) {
  TempDir dir;
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  Status status = WriteFileAtomically("relative.txt", "here");
  std::string contents = ReadFileToString("relative.txt").value_or("");
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(contents, "here");
}

}  // namespace
}  // namespace dtf
