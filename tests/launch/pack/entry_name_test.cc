#include "lib/launch/pack/entry_name.h"

#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/archive_reader.h"
#include "lib/launch/pack/unpack.h"
#include "lib/launch/pack/zip_format.h"
#include "lib/launch/pack/zip_writer.h"
#include "tests/launch/pack/crafted_zip.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(CheckEntryName, AcceptsRelativeNames) {
  for (const char* name : {"a", "bin/dtf", "lib/x.so.1", "a..b/.c", "..x"}) {
    EXPECT_TRUE(CheckEntryName(name).ok()) << name;
  }
}

TEST(CheckEntryName, RefusesNamesThatLeaveTheirDirectory) {
  for (const std::string& name :
       {std::string(""), std::string("/etc/passwd"), std::string("../x"),
        std::string("a/../../x"), std::string("a/.."), std::string("./a"),
        std::string("a//b"), std::string("a/"), std::string("a\\..\\b"),
        std::string("a\0b", 3)}) {
    const Status s = CheckEntryName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
  }
}

TEST(CheckEntryName, ZipWriterRefusesWhatItRefuses) {
  ZipWriter zip;
  const Status s = zip.AddBytes("../x", "x", kModeFile);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("../x"));
}

class CraftedArchiveTest : public ::testing::Test {
 protected:
  std::string Crafted(const std::string& bad_name) {
    const std::string path = dir_.Join("crafted.zip");
    EXPECT_TRUE(testing::WriteCraftedZip(
        path, {{"bin/dtf", "#!/bin/sh\n"}, {bad_name, "escaped"}}));
    return path;
  }
  dtf::testing::TempDir dir_{"dtf_entry_name_test"};
};

TEST_F(CraftedArchiveTest, ReaderNamesTheArchiveAndTheEntry) {
  for (const char* bad : {"../escape", "/tmp/escape", "a/../../escape"}) {
    const std::string zip = Crafted(bad);
    StatusOr<std::unique_ptr<ArchiveReader>> reader = ArchiveReader::Open(zip);
    ASSERT_TRUE(reader.ok()) << reader.status();
    const Status s = (*reader)->CheckEntryNames();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << bad;
    EXPECT_THAT(Message(s), HasSubstr(StrCat(zip, ": ", bad, ": ")));
  }
}

TEST_F(CraftedArchiveTest, UnpackingRefusesItAndWritesNothing) {
  const std::string zip = Crafted("../escape");
  const std::string dest = dir_.Join("out/dest");
  StatusOr<Manifest> m = UnpackArchive(zip, dest);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(m.status()), HasSubstr(StrCat(zip, ": ../escape: ")));
  EXPECT_FALSE(fs::exists(dir_.Join("out/escape")));
  EXPECT_FALSE(fs::exists(dest));
}

}  // namespace
}  // namespace dtf::pack
