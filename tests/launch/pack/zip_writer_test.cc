#include "lib/launch/pack/zip_writer.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/pack/archive_reader.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

uint16_t U16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) |
                               static_cast<uint8_t>(b[at + 1]) << 8);
}
uint32_t U32(const std::string& b, size_t at) {
  return uint32_t{U16(b, at)} | uint32_t{U16(b, at + 2)} << 16;
}

// One central-directory record of a zip file, and the extra-field length of
// its local header.
struct CentralEntry {
  std::string name;
  uint16_t dos_time, dos_date, extra, local_extra, comment;
  uint32_t external;
};

// Walks the central directory (zip's APPNOTE, section 4.3.16).
std::vector<CentralEntry> CentralDirectory(const std::string& zip) {
  std::vector<CentralEntry> out;
  const size_t eocd = zip.rfind(std::string("PK\x05\x06", 4));
  EXPECT_NE(eocd, std::string::npos);
  if (eocd == std::string::npos) return out;
  const uint16_t count = U16(zip, eocd + 10);
  size_t at = U32(zip, eocd + 16);
  for (uint16_t i = 0; i < count; ++i) {
    EXPECT_EQ(U32(zip, at), 0x02014b50u);
    CentralEntry e;
    e.dos_time = U16(zip, at + 12);
    e.dos_date = U16(zip, at + 14);
    const uint16_t name_len = U16(zip, at + 28);
    e.extra = U16(zip, at + 30);
    e.comment = U16(zip, at + 32);
    e.external = U32(zip, at + 38);
    const uint32_t local = U32(zip, at + 42);
    EXPECT_EQ(U32(zip, local), 0x04034b50u);
    e.local_extra = U16(zip, local + 28);
    e.name = zip.substr(at + 46, name_len);
    out.push_back(e);
    at += 46 + name_len + e.extra + e.comment;
  }
  return out;
}

class ZipWriterTest : public ::testing::Test {
 protected:
  // The same entries, added in the order given.
  StatusOr<WrittenArchive> WriteSample(const std::string& out, bool reverse) {
    ZipWriter zip;
    std::vector<std::pair<std::string, std::string>> entries = {
        {"b/run.sh", "#!/bin/sh\necho hi\n"},
        {"a.txt", std::string(100000, 'a')},
        {"b/data.bin", std::string("\0\1\2\3", 4)}};
    if (reverse) std::reverse(entries.begin(), entries.end());
    for (const auto& [name, data] : entries) {
      const std::string source = dir_.Join(StrCatName(name));
      testing::WriteFile(source, data);
      // The source's own time and mode must not matter.
      ::chmod(source.c_str(), reverse ? 0600 : 0777);
      const uint32_t mode = name.ends_with(".sh") ? kModeExecutable : kModeFile;
      if (name == "a.txt") {
        DTF_RETURN_IF_ERROR(zip.AddBytes(name, data, mode));
      } else {
        DTF_RETURN_IF_ERROR(zip.AddFile(name, source, mode));
      }
    }
    return zip.Write(out, "test-");
  }
  static std::string StrCatName(std::string name) {
    std::replace(name.begin(), name.end(), '/', '_');
    return name;
  }
  testing::TempDir dir_{"dtf_zip_writer_test"};
};

TEST_F(ZipWriterTest, SameEntriesGiveTheSameBytesAndName) {
  StatusOr<WrittenArchive> first = WriteSample(dir_.Join("one"), false);
  ASSERT_TRUE(first.ok()) << first.status();
  StatusOr<WrittenArchive> second = WriteSample(dir_.Join("two"), true);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(fs::path(first->path).filename(),
            fs::path(second->path).filename());
  const std::string bytes = testing::ReadFile(first->path);
  EXPECT_EQ(bytes, testing::ReadFile(second->path));
  EXPECT_EQ(first->size, bytes.size());
  EXPECT_EQ(*Sha256Hex(bytes), first->sha256);
  EXPECT_EQ(fs::path(first->path).filename().string(),
            "test-" + first->sha256.substr(0, 16) + ".zip");
  // Only the archive is left in the output directory.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.Join("one")),
                          fs::directory_iterator()),
            1);
}

TEST_F(ZipWriterTest, FixedTimesModesAndNoExtraFields) {
  StatusOr<WrittenArchive> written = WriteSample(dir_.Join("out"), false);
  ASSERT_TRUE(written.ok()) << written.status();
  const std::vector<CentralEntry> entries =
      CentralDirectory(testing::ReadFile(written->path));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "a.txt");
  EXPECT_EQ(entries[1].name, "b/data.bin");
  EXPECT_EQ(entries[2].name, "b/run.sh");
  for (const CentralEntry& e : entries) {
    EXPECT_EQ(e.dos_date, kDosDate) << e.name;
    EXPECT_EQ(e.dos_time, kDosTime) << e.name;
    EXPECT_EQ(e.extra, 0) << e.name;
    EXPECT_EQ(e.local_extra, 0) << e.name;
    EXPECT_EQ(e.comment, 0) << e.name;
  }
  EXPECT_EQ(entries[0].external >> 16, S_IFREG | 0644u);
  EXPECT_EQ(entries[2].external >> 16, S_IFREG | 0755u);

  StatusOr<std::unique_ptr<ArchiveReader>> reader =
      ArchiveReader::Open(written->path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->entries().size(), 3u);
  EXPECT_EQ((*reader)->entries()[2].mode, 0755u);
  EXPECT_EQ(*(*reader)->ReadAll(0, 1 << 20), std::string(100000, 'a'));
  EXPECT_EQ(*(*reader)->ReadAll(1, 1 << 20), std::string("\0\1\2\3", 4));
}

TEST_F(ZipWriterTest, RejectsBadEntries) {
  ZipWriter zip;
  for (const char* bad :
       {"", "/abs", "a/../b", "./a", "a//b", "dir/", "a\\b"}) {
    EXPECT_EQ(zip.AddBytes(bad, "x", kModeFile).code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(zip.AddBytes("a", "x", kModeFile).ok());
  EXPECT_EQ(zip.AddBytes("a", "y", kModeFile).code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(zip.AddBytes("b", "y", 0600).code(), StatusCode::kInvalidArgument);
  const Status missing = zip.AddFile("c", dir_.Join("missing"), kModeFile);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(missing), HasSubstr(dir_.Join("missing")));
}

TEST_F(ZipWriterTest, RejectsNamesThatAreNotUtf8) {
  ZipWriter zip;
  // A stray continuation byte, an overlong '/', a surrogate, past U+10FFFF,
  // a sequence cut short.
  for (const char* bad : {"bin\xafrun",
                          "a\xc0\xaf"
                          "b",
                          "\xed\xa0\x80", "\xf4\x90\x80\x80", "x\xe2\x82"}) {
    const Status s = zip.AddBytes(bad, "x", kModeFile);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Message(s), HasSubstr("UTF-8")) << bad;
  }
  for (const char* good :
       {"caf\xc3\xa9.txt", "\xe2\x82\xac/\xf0\x9f\x98\x80"}) {
    EXPECT_TRUE(zip.AddBytes(good, "x", kModeFile).ok()) << good;
  }
}

TEST_F(ZipWriterTest, FailureLeavesNothingBehind) {
  const std::string source = dir_.Join("source");
  testing::WriteFile(source, "data");
  ZipWriter zip;
  ASSERT_TRUE(zip.AddBytes("a", "x", kModeFile).ok());
  ASSERT_TRUE(zip.AddFile("b", source, kModeFile).ok());
  fs::remove(source);
  const std::string out = dir_.Join("out");
  StatusOr<WrittenArchive> written = zip.Write(out, "test-");
  EXPECT_FALSE(written.ok());
  EXPECT_THAT(Message(written.status()), HasSubstr(source));
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(ZipWriterTest, ChangedSourceIsAnError) {
  const std::string source = dir_.Join("source");
  testing::WriteFile(source, "data");
  ZipWriter zip;
  ASSERT_TRUE(zip.AddFile("b", source, kModeFile).ok());
  testing::WriteFile(source, "longer data");
  const std::string out = dir_.Join("out");
  StatusOr<WrittenArchive> written = zip.Write(out, "test-");
  EXPECT_EQ(written.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(written.status()),
              HasSubstr(source + ": changed while it was being packed"));
  EXPECT_TRUE(fs::is_empty(out));
}

}  // namespace
}  // namespace dtf::pack
