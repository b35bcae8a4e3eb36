#include "lib/base/file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/bounded_read.h"
#include "lib/base/strings.h"
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

TEST(ReadFileToStringAtMost, StopsPastTheLimit) {
  TempDir dir;
  const std::string path = dir.path() + "/f";
  ASSERT_TRUE(WriteFileAtomically(path, "12345").ok());
  EXPECT_EQ(ReadFileToStringAtMost(path, 5).value_or(""), "12345");
  StatusOr<std::string> over = ReadFileToStringAtMost(path, 4);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(over.status()), HasSubstr(path + ": larger than 4"));
}

// A private file written with mode `mode`.
std::string WritePrivate(const TempDir& dir, const std::string& name,
                         std::string_view contents, mode_t mode = 0600) {
  const std::string path = dir.Join(name);
  EXPECT_TRUE(WriteFileAtomically(path, contents).ok());
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

TEST(ReadPrivateFile, ReadsAnOwnerOnlyRegularFile) {
  TempDir dir;
  EXPECT_EQ(ReadPrivateFile(WritePrivate(dir, "s", "abc"), 64).value_or(""),
            "abc");
  EXPECT_EQ(ReadPrivateFile(WritePrivate(dir, "r", "x", 0400), 64).value_or(""),
            "x");
}

TEST(ReadPrivateFile, RefusesGroupOrOtherBitsNamingTheMode) {
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0610, 0602}) {
    const std::string path = WritePrivate(dir, "s", "abc", mode);
    StatusOr<std::string> s = ReadPrivateFile(path, 64);
    ASSERT_FALSE(s.ok()) << std::oct << mode;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    char expected[16];
    std::snprintf(expected, sizeof(expected), "mode 0%o", mode);
    EXPECT_THAT(Message(s.status()), HasSubstr(path + ": " + expected));
    EXPECT_THAT(Message(s.status()),
                HasSubstr("must not be readable by group or others "
                          "(chmod 600)"));
  }
}

TEST(ReadPrivateFile, RefusesASymbolicLinkEvenToAPrivateFile) {
  TempDir dir;
  const std::string target = WritePrivate(dir, "s", "abc");
  const std::string link = dir.Join("link");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  StatusOr<std::string> s = ReadPrivateFile(link, 64);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s.status()), HasSubstr(link + ": is a symbolic link"));
}

// A Secret volume as the kubelet writes it: <key> -> ..data/<key>,
// ..data -> ..<timestamp>, the files in ..<timestamp>/.
TEST(ReadPrivateFile, ReadsAKeyOfAKubernetesSecretVolume) {
  TempDir dir;
  const std::string stamp = "..2026_11_25_16_00_00.123456789";
  ASSERT_EQ(::mkdir(dir.Join(stamp).c_str(), 0755), 0);
  WritePrivate(dir, stamp + "/secret", "abc", 0400);
  WritePrivate(dir, stamp + "/open", "abc", 0644);
  ASSERT_EQ(::symlink(stamp.c_str(), dir.Join("..data").c_str()), 0);
  for (const char* key : {"secret", "open"}) {
    ASSERT_EQ(::symlink(StrCat("..data/", key).c_str(), dir.Join(key).c_str()),
              0);
  }
  EXPECT_EQ(ProjectedVolumeFile(dir.Join("secret")),
            StrCat(dir.path(), "/", stamp, "/secret"));
  EXPECT_EQ(ReadPrivateFile(dir.Join("secret"), 64).value_or(""), "abc");
  // The file's own checks still hold.
  StatusOr<std::string> open = ReadPrivateFile(dir.Join("open"), 64);
  ASSERT_FALSE(open.ok());
  EXPECT_THAT(Message(open.status()), HasSubstr("mode 0644"));
}

// Links of any other shape stay refused: a key whose link goes elsewhere,
// a ..data that leaves the volume's directory.
TEST(ReadPrivateFile, RefusesLinksThatAreNoSecretVolumesKey) {
  TempDir dir;
  const std::string target = WritePrivate(dir, "elsewhere", "abc");
  ASSERT_EQ(::mkdir(dir.Join("vol").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(target.c_str(), dir.Join("vol/..data").c_str()), 0);
  ASSERT_EQ(::symlink("..data/secret", dir.Join("vol/secret").c_str()), 0);
  ASSERT_EQ(::symlink("../elsewhere", dir.Join("vol/other").c_str()), 0);
  for (const char* key : {"vol/secret", "vol/other"}) {
    EXPECT_EQ(ProjectedVolumeFile(dir.Join(key)), "") << key;
    StatusOr<std::string> s = ReadPrivateFile(dir.Join(key), 64);
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_THAT(Message(s.status()),
                HasSubstr(dir.Join(key) + ": is a symbolic link"));
  }
}

TEST(ReadPrivateFile, RefusesWhatIsNotARegularFileOrTooLarge) {
  TempDir dir;
  const std::string fifo = dir.Join("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  StatusOr<std::string> f = ReadPrivateFile(fifo, 64);  // must not block
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(Message(f.status()), HasSubstr(fifo + ": not a regular file"));
  ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
  StatusOr<std::string> d = ReadPrivateFile(dir.path(), 64);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(Message(d.status()), HasSubstr("not a regular file"));
  const std::string big = WritePrivate(dir, "big", std::string(65, 'a'));
  StatusOr<std::string> b = ReadPrivateFile(big, 64);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(Message(b.status()),
              HasSubstr(big + ": 65 bytes, larger than the 64 allowed"));
  EXPECT_EQ(ReadPrivateFile(dir.Join("missing"), 64).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace dtf
