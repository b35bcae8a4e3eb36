// dtf pack env, zip and list as a user meets them, through the binary.
#include <filesystem>
#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launch/pack/pack_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class PackCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.Join("vocab"));
    dtf::testing::WriteFile(dir_.Join("dtf.toml"), R"([data]
csv = ["train.csv"]

[schema]
columns = ["sex:str"]

[[features.categorical]]
name = "sex"
vocabulary_file = "vocab/sex.txt"
)");
    dtf::testing::WriteFile(dir_.Join("vocab/sex.txt"), "male\nfemale\n");
    dtf::testing::WriteFile(dir_.Join("train.csv"), "sex\nmale\n");
  }
  testing::Result Run(const std::string& args) {
    return testing::Sh(dir_.path(),
                       std::string("NO_COLOR=1 '") + DTF_BINARY + "' " + args);
  }
  dtf::testing::TempDir dir_{"dtf_pack_cli_test"};
};

TEST_F(PackCliTest, ZipPrintsTheArchiveAndListShowsIt) {
  testing::Result r = Run("pack zip");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(
      r.out, std::regex(R"(\.dtf/pack/job-[0-9a-f]{16}\.zip\n)")))
      << r.out;
  const std::string archive = r.out.substr(0, r.out.size() - 1);
  EXPECT_TRUE(fs::exists(dir_.Join(archive)));
  EXPECT_THAT(r.err, HasSubstr("dtf: packed 2 files"));

  // Same job, same archive.
  testing::Result again = Run("pack zip --job dtf.toml");
  EXPECT_EQ(again.out, r.out);

  testing::Result list = Run("pack list " + archive);
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("job archive of dtf"));
  EXPECT_TRUE(std::regex_search(
      list.out, std::regex(R"(\n0644 +[0-9]+  [0-9a-f]{64}  vocab/sex.txt\n)")))
      << list.out;
  EXPECT_THAT(list.out, HasSubstr("  dtf.toml\n"));
  EXPECT_THAT(list.out, Not(HasSubstr("train.csv")));

  testing::Result json = Run("pack list --json " + archive);
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"archive\": \"" + archive + "\""));
  EXPECT_THAT(json.out, HasSubstr("\"kind\": \"job\""));
  EXPECT_THAT(json.out, HasSubstr("\"path\": \"vocab/sex.txt\""));

  testing::Result data = Run("pack zip --with-data --out packs --json");
  ASSERT_EQ(data.code, 0) << data.err;
  EXPECT_THAT(data.out, HasSubstr("\"archive\": \"packs/job-"));
  EXPECT_THAT(data.out, HasSubstr("\"path\": \"train.csv\""));
  EXPECT_THAT(data.out, HasSubstr("\"with_data\": true"));
}

TEST_F(PackCliTest, Errors) {
  testing::Result r = Run("pack zip --job none.toml");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("dtf: error: "));
  EXPECT_THAT(r.err, HasSubstr("none.toml"));
  EXPECT_FALSE(fs::exists(dir_.Join(".dtf/pack")));

  fs::remove(dir_.Join("vocab/sex.txt"));
  r = Run("pack zip");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("dtf.toml:9:19: "
                               "features.categorical[0].vocabulary_file: "));

  r = Run("pack list nothing.zip");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("nothing.zip"));

  r = Run("pack");
  EXPECT_EQ(r.code, 2);
  r = Run("pack env --with-data");
  EXPECT_EQ(r.code, 2);
}

TEST_F(PackCliTest, EnvArchiveRunsOnceUnpacked) {
  testing::Result r = Run("pack env --out env");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("env/dtf-env-"));
  EXPECT_THAT(r.err, HasSubstr("glibc"));
  const std::string archive = r.out.substr(0, r.out.size() - 1);
  testing::Result list = Run("pack list " + archive);
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("  bin/dtf\n"));
  EXPECT_THAT(list.out, HasSubstr("  libexec/dtf\n"));
  EXPECT_THAT(list.out, HasSubstr("  lib/libgrpc++.so"));

  // Any unzip that keeps Unix modes will do; python3's zipfile does not, so
  // the modes are restored from the archive's attributes by hand.
  const std::string unpack =
      "python3 -c 'import sys, zipfile, os\n"
      "z = zipfile.ZipFile(sys.argv[1])\n"
      "for i in z.infolist():\n"
      "    z.extract(i, sys.argv[2])\n"
      "    os.chmod(os.path.join(sys.argv[2], i.filename), i.external_attr >> "
      "16 & 0o777)\n"
      "' " +
      archive + " unpacked";
  testing::Result u = testing::Sh(dir_.path(), unpack);
  ASSERT_EQ(u.code, 0) << u.err;
  testing::Result version = testing::Sh(
      dir_.path(), "env -i PATH=/usr/bin:/bin unpacked/bin/dtf --version");
  EXPECT_EQ(version.code, 0) << version.err;
  EXPECT_THAT(version.out, StartsWith("dtf "));
}

}  // namespace
}  // namespace dtf::pack
