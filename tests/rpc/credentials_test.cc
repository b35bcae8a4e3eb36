#include "lib/rpc/credentials.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "tests/testing/temp_dir.h"

namespace dtf::rpc {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

const std::string kSecret(64, 'a');

std::string WriteSecret(const TempDir& dir, const std::string& name,
                        const std::string& text, mode_t mode) {
  const std::string path = dir.Join(name);
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

TEST(ReadSecretFile, ReadsHexFromAnOwnerOnlyFile) {
  TempDir dir;
  StatusOr<std::string> s =
      ReadSecretFile(WriteSecret(dir, "secret", kSecret + "\n", 0600));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, kSecret);
}

TEST(ReadSecretFile, RefusesASymbolicLinkToAPrivateSecret) {
  TempDir dir;
  const std::string target = WriteSecret(dir, "secret", kSecret, 0600);
  const std::string link = dir.Join("link");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  StatusOr<std::string> s = ReadSecretFile(link);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s.status()), HasSubstr(link + ": is a symbolic link"));
}

TEST(ReadSecretFile, RefusesAReadableByOthersFileNamingTheMode) {
  TempDir dir;
  const std::string path = WriteSecret(dir, "secret", kSecret, 0644);
  StatusOr<std::string> s = ReadSecretFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()),
              HasSubstr(path + ": mode 0644, must not be readable by group or "
                               "others (chmod 600)"));
}

TEST(ReadSecretFile, RefusesAnOversizedFileBeforeReadingIt) {
  TempDir dir;
  const std::string path = WriteSecret(
      dir, "secret", kSecret + std::string(kMaxSecretFileBytes, ' '), 0600);
  StatusOr<std::string> s = ReadSecretFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr("larger than the 4096 allowed"));
}

TEST(ReadSecretFile, RefusesWhatIsNotHex) {
  TempDir dir;
  StatusOr<std::string> s =
      ReadSecretFile(WriteSecret(dir, "secret", "not hex", 0600));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s.status()), HasSubstr("expected 32 to 256 hex digits"));
}

}  // namespace
}  // namespace dtf::rpc
