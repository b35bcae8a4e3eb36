#include "lib/launch/pack/env_cache.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/sha256.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EnvCacheTest : public ::testing::Test {
 protected:
  // An archive file of `bytes` and a cache entry recording it.
  std::string Cached(const std::string& bytes) {
    const std::string archive = dir_.Join("env-0123456789abcdef.zip");
    dtf::testing::WriteFile(archive, bytes);
    PackResult r;
    r.archive.path = archive;
    r.archive.size = bytes.size();
    r.archive.sha256 = *Sha256Hex(bytes);
    r.manifest.kind = kKindEnv;
    r.manifest.dtf_version = "0.1.0";
    r.manifest.entry = "bin/dtf";
    r.manifest.files.push_back({"bin/dtf", 3, *Sha256Hex("abc"), 0755});
    const std::string cache = dir_.Join("env-cache/key.json");
    const Status written = WriteEnvCache(cache, r);
    EXPECT_TRUE(written.ok()) << written;
    return cache;
  }
  dtf::testing::TempDir dir_{"dtf_env_cache_test"};
};

TEST_F(EnvCacheTest, TrustsAnUntouchedArchive) {
  const std::string cache = Cached("the packed runtime");
  std::string note = "stale";
  std::optional<PackResult> r = ReadEnvCache(cache, &note);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->archive.size, 18u);
  EXPECT_EQ(r->manifest.entry, "bin/dtf");
  EXPECT_EQ(note, "");
}

TEST_F(EnvCacheTest, ATamperedArchiveOfTheSameSizeIsPackedAgain) {
  const std::string cache = Cached("the packed runtime");
  const std::string archive = dir_.Join("env-0123456789abcdef.zip");
  dtf::testing::WriteFile(archive, "the PACKED runtime");
  ASSERT_EQ(fs::file_size(archive), 18u);
  std::string note;
  EXPECT_FALSE(ReadEnvCache(cache, &note).has_value());
  EXPECT_THAT(note, HasSubstr("packing the runtime again"));
  EXPECT_THAT(note, HasSubstr(archive));
  EXPECT_THAT(note, HasSubstr(*Sha256Hex("the PACKED runtime")));
}

TEST_F(EnvCacheTest, AMissingArchiveOrABrokenEntryIsPackedAgain) {
  const std::string cache = Cached("the packed runtime");
  fs::remove(dir_.Join("env-0123456789abcdef.zip"));
  std::string note;
  EXPECT_FALSE(ReadEnvCache(cache, &note).has_value());
  EXPECT_EQ(note, "");
  dtf::testing::WriteFile(cache, "{\"archive\": 3");
  EXPECT_FALSE(ReadEnvCache(cache, &note).has_value());
  EXPECT_FALSE(ReadEnvCache(dir_.Join("none.json"), &note).has_value());
}

}  // namespace
}  // namespace dtf::pack
