#include "lib/launch/pack/unpack.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"
#include "lib/launch/pack/zip_writer.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class UnpackTest : public ::testing::Test {
 protected:
  // An archive of `files` (sorted by path) whose manifest is `manifest` (or
  // the true one).
  std::string Archive(const std::vector<ManifestFile>& files,
                      const std::vector<std::string>& contents,
                      const Manifest* manifest = nullptr) {
    Manifest m;
    m.kind = kKindJob;
    m.dtf_version = "0.1.0";
    m.entry = files.empty() ? "" : files[0].path;
    m.files = files;
    ZipWriter zip;
    for (size_t i = 0; i < files.size(); ++i) {
      EXPECT_TRUE(zip.AddBytes(files[i].path, contents[i], files[i].mode).ok());
    }
    EXPECT_TRUE(zip.AddBytes(kManifestName,
                             ManifestToJson(manifest ? *manifest : m),
                             kModeFile)
                    .ok());
    StatusOr<WrittenArchive> w = zip.Write(dir_.Join("zips"), "t-");
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? w->path : "";
  }
  static ManifestFile File(const std::string& path, const std::string& data,
                           uint32_t mode) {
    return {path, data.size(), *Sha256Hex(data), mode};
  }
  dtf::testing::TempDir dir_{"dtf_unpack_test"};
};

TEST_F(UnpackTest, RestoresModesAndReplacesFiles) {
  const std::string zip =
      Archive({File("a.txt", "a", 0644), File("bin/run", "#!/bin/sh\n", 0755)},
              {"a", "#!/bin/sh\n"});
  const std::string dest = dir_.Join("dest");
  fs::create_directories(dest);
  dtf::testing::WriteFile(dest + "/a.txt", "old");
  dtf::testing::WriteFile(dest + "/kept.txt", "kept");
  StatusOr<Manifest> m = UnpackArchive(zip, dest);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(dtf::testing::ReadFile(dest + "/a.txt"), "a");
  EXPECT_EQ(dtf::testing::ReadFile(dest + "/kept.txt"), "kept");
  struct stat st;
  ASSERT_EQ(::stat((dest + "/bin/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat((dest + "/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // No staging directory is left.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dest)) {
    EXPECT_NE(e.path().filename().string().rfind(".dtf-unpack", 0), 0u);
    ++entries;
  }
  EXPECT_EQ(entries, 3);
}

TEST_F(UnpackTest, DigestMismatchChangesNothing) {
  ManifestFile lie = File("a.txt", "b", 0644);
  Manifest m;
  m.kind = kKindJob;
  m.dtf_version = "0.1.0";
  m.entry = "a.txt";
  m.files = {lie};
  const std::string zip = Archive({File("a.txt", "a", 0644)}, {"a"}, &m);
  const std::string dest = dir_.Join("dest");
  StatusOr<Manifest> r = UnpackArchive(zip, dest);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(r.status()),
              HasSubstr(zip + ": a.txt: sha256 " + *Sha256Hex("a")));
  EXPECT_TRUE(fs::is_empty(dest));
  EXPECT_EQ(ListArchive(zip).status().code(), StatusCode::kDataLoss);
}

TEST_F(UnpackTest, EntriesMustMatchTheManifest) {
  Manifest m;
  m.kind = kKindJob;
  m.dtf_version = "0.1.0";
  m.entry = "a.txt";
  m.files = {File("a.txt", "a", 0644), File("b.txt", "b", 0644)};
  std::string zip = Archive({File("a.txt", "a", 0644)}, {"a"}, &m);
  EXPECT_THAT(Message(ListArchive(zip).status()),
              HasSubstr("b.txt: listed in the manifest but missing"));

  m.files = {File("a.txt", "a", 0644)};
  zip = Archive({File("a.txt", "a", 0644), File("x.txt", "x", 0644)},
                {"a", "x"}, &m);
  EXPECT_THAT(Message(ListArchive(zip).status()),
              HasSubstr("x.txt: not listed in the manifest"));

  m.files = {File("a.txt", "a", 0755)};
  zip = Archive({File("a.txt", "a", 0644)}, {"a"}, &m);
  EXPECT_THAT(Message(ListArchive(zip).status()),
              HasSubstr("a.txt: mode 0644, the manifest says 0755"));
}

TEST_F(UnpackTest, NotAnArchive) {
  const std::string path = dir_.Join("x.zip");
  dtf::testing::WriteFile(path, "not a zip file at all");
  StatusOr<ArchiveListing> r = ListArchive(path);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(r.status()), HasSubstr(path + ": "));
  EXPECT_EQ(ListArchive(dir_.Join("none.zip")).status().code(),
            StatusCode::kNotFound);

  ZipWriter zip;
  ASSERT_TRUE(zip.AddBytes("a.txt", "a", kModeFile).ok());
  StatusOr<WrittenArchive> w = zip.Write(dir_.Join("zips"), "plain-");
  ASSERT_TRUE(w.ok());
  EXPECT_THAT(Message(ListArchive(w->path).status()),
              HasSubstr("no manifest.json"));
}

}  // namespace
}  // namespace dtf::pack
