// dtf pack image: the tar and gzip pieces, the OCI archive of the real dtf
// (reproducible, its blobs and files checked), its rootfs run by its own
// loader, and what skopeo, umoci and podman make of it where installed.
#include "lib/launch/pack/pack_image.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/launch/pack/image_tar.h"
#include "lib/launch/pack/sha256.h"
#include "tests/launch/pack/pack_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

bool HaveTool(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

TEST(ImageTarTest, RoundTripsWithParentsSortedAndFixedHeaders) {
  std::vector<TarEntry> in;
  in.push_back({"usr/bin/tool", TarEntry::Type::kFile, 0755, "#!x\n", ""});
  in.push_back(
      {"a.txt", TarEntry::Type::kFile, 0644, std::string(513, 'a'), ""});
  in.push_back(
      {"usr/lib/libx.so", TarEntry::Type::kSymlink, 0777, "", "libx.so.1"});
  in.push_back({"tmp", TarEntry::Type::kDirectory, 01777, "", ""});
  const std::string deep = std::string(120, 'd') + "/" + std::string(90, 'f');
  in.push_back({deep, TarEntry::Type::kFile, 0644, "deep", ""});
  StatusOr<std::string> tar = WriteTar(in);
  ASSERT_TRUE(tar.ok()) << tar.status();
  EXPECT_EQ(tar->size() % 512, 0u);
  // Entry order does not matter.
  std::reverse(in.begin(), in.end());
  EXPECT_TRUE(*WriteTar(in) == *tar);

  StatusOr<std::vector<TarEntry>> out = ReadTar(*tar, "t.tar");
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> paths;
  for (const TarEntry& e : *out) paths.push_back(e.path);
  EXPECT_THAT(
      paths, ::testing::ElementsAre("a.txt", std::string(120, 'd'), deep, "tmp",
                                    "usr", "usr/bin", "usr/bin/tool", "usr/lib",
                                    "usr/lib/libx.so"));
  EXPECT_EQ((*out)[0].data, std::string(513, 'a'));
  EXPECT_EQ((*out)[2].data, "deep");
  EXPECT_EQ((*out)[3].mode, 01777u);
  EXPECT_EQ((*out)[3].type, TarEntry::Type::kDirectory);
  EXPECT_EQ((*out)[4].mode, 0755u);
  EXPECT_EQ((*out)[6].mode, 0755u);
  EXPECT_EQ((*out)[8].type, TarEntry::Type::kSymlink);
  EXPECT_EQ((*out)[8].target, "libx.so.1");

  // GNU tar reads it: owner 0/0, mtime 0.
  dtf::testing::TempDir dir("dtf_image_tar_test");
  ASSERT_TRUE(WriteFileAtomically(dir.Join("t.tar"), *tar).ok());
  testing::Result r = testing::Sh(dir.path(), "tar -tvf t.tar --numeric-owner");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(
      r.out,
      HasSubstr(
          "-rwxr-xr-x 0/0               4 1970-01-01 00:00 usr/bin/tool"));
}

TEST(ImageTarTest, RejectsPathsThatLeaveTheRootOrRepeat) {
  EXPECT_THAT(
      std::string(Message(
          WriteTar({{"../x", TarEntry::Type::kFile, 0644, "", ""}}).status())),
      HasSubstr("../x"));
  EXPECT_FALSE(WriteTar({{"/x", TarEntry::Type::kFile, 0644, "", ""}}).ok());
  EXPECT_FALSE(WriteTar({{"x", TarEntry::Type::kFile, 0644, "", ""},
                         {"x", TarEntry::Type::kFile, 0644, "", ""}})
                   .ok());
  EXPECT_FALSE(
      WriteTar({{std::string(300, 'x'), TarEntry::Type::kFile, 0644, "", ""}})
          .ok());
}

TEST(ImageTarTest, CorruptTarIsDataLoss) {
  std::string tar = *WriteTar({{"x", TarEntry::Type::kFile, 0644, "abc", ""}});
  tar[10] ^= 1;
  StatusOr<std::vector<TarEntry>> r = ReadTar(tar, "bad.tar");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(Message(r.status())),
              HasSubstr("bad.tar: bad tar header checksum"));
  EXPECT_EQ(ReadTar(tar.substr(0, 100), "cut.tar").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(ImageTarTest, GzipHasNoTimestampAndRoundTrips) {
  const std::string data(100000, 'z');
  StatusOr<std::string> gz = Gzip(data);
  ASSERT_TRUE(gz.ok()) << gz.status();
  ASSERT_GE(gz->size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  EXPECT_EQ(gz->substr(4, 4), std::string(4, '\0'));  // MTIME
  EXPECT_EQ((*gz)[3] & 0x08, 0);                      // no FNAME
  EXPECT_TRUE(*Gzip(data) == *gz);
  EXPECT_TRUE(*Gunzip(*gz, "z.gz") == data);
  EXPECT_EQ(Gunzip(gz->substr(0, gz->size() / 2), "half.gz").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(Gunzip("not gzip", "x").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(PackImageTest, DefaultTagIsAValidReference) {
  EXPECT_EQ(DefaultImageTag("1.4.0"), "dtf:1.4.0");
  EXPECT_EQ(DefaultImageTag("1.4.0+g1a2b"), "dtf:1.4.0-g1a2b");
  EXPECT_TRUE(IsGpuDriverLibrary("libcuda.so.1"));
  EXPECT_TRUE(IsGpuDriverLibrary("libnvidia-ml.so.1"));
  EXPECT_FALSE(IsGpuDriverLibrary("libcudart.so.12"));
  EXPECT_FALSE(IsGpuDriverLibrary("libc.so.6"));
}

// Packing the real dtf takes seconds; the tests share one image.
class PackImageFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new dtf::testing::TempDir("dtf_pack_image_test");
    PackImageOptions options;
    options.binary = DTF_BINARY;
    options.dtf_version = "0.1.0-test";
    options.output = dir_->Join("out/image.tar");
    StatusOr<ImageResult> r = PackImage(options);
    ASSERT_TRUE(r.ok()) << r.status();
    result_ = new ImageResult(*std::move(r));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  // The layer unpacked into <dir>/rootfs with GNU tar.
  static std::string Rootfs() {
    const std::string root = dir_->Join("rootfs");
    if (fs::exists(root)) return root;
    fs::create_directories(dir_->Join("oci"));
    fs::create_directories(root);
    testing::Result r = testing::Sh(
        dir_->path(),
        "tar -xf out/image.tar -C oci && tar -xzf oci/blobs/sha256/" +
            result_->layer_digest.substr(7) + " -C rootfs");
    EXPECT_EQ(r.code, 0) << r.err;
    return root;
  }

  static dtf::testing::TempDir* dir_;
  static ImageResult* result_;
};
dtf::testing::TempDir* PackImageFixture::dir_ = nullptr;
ImageResult* PackImageFixture::result_ = nullptr;

TEST_F(PackImageFixture, HoldsTheBinaryGlibcAndTheLoader) {
  ASSERT_NE(result_, nullptr);
  EXPECT_EQ(result_->tag, "dtf:0.1.0-test");
  std::set<std::string> paths;
  for (const ManifestFile& f : result_->manifest.files) paths.insert(f.path);
  EXPECT_TRUE(paths.count("usr/bin/dtf"));
  EXPECT_TRUE(paths.count("usr/lib/libc.so.6"));
  EXPECT_TRUE(paths.count("usr/lib/libm.so.6"));
  EXPECT_TRUE(paths.count("usr/lib/libstdc++.so.6"));
  EXPECT_FALSE(paths.count("usr/lib/libcuda.so.1"));
  bool loader = false;
  for (const std::string& p : paths)
    loader |= p.starts_with("lib64/ld-linux") || p.starts_with("lib/ld-linux");
  EXPECT_TRUE(loader);
  EXPECT_EQ(result_->manifest.entry, "usr/bin/dtf");
}

TEST_F(PackImageFixture, SameBinaryGivesTheSameBytes) {
  ASSERT_NE(result_, nullptr);
  PackImageOptions options;
  options.binary = DTF_BINARY;
  options.dtf_version = "0.1.0-test";
  options.output = dir_->Join("again.tar");
  StatusOr<ImageResult> again = PackImage(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->manifest_digest, result_->manifest_digest);
  EXPECT_TRUE(dtf::testing::ReadFile(again->path) ==
              dtf::testing::ReadFile(result_->path));
  // Another tag changes the index only.
  options.tag = "registry.example/ml/dtf:v1";
  options.output = dir_->Join("tagged.tar");
  StatusOr<ImageResult> tagged = PackImage(options);
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  EXPECT_EQ(tagged->manifest_digest, result_->manifest_digest);
  EXPECT_EQ(ListImage(tagged->path)->tag, "registry.example/ml/dtf:v1");
}

TEST_F(PackImageFixture, ListChecksBlobsAndFiles) {
  ASSERT_NE(result_, nullptr);
  StatusOr<ImageResult> listed = ListImage(result_->path);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->tag, result_->tag);
  EXPECT_EQ(listed->layer_digest, result_->layer_digest);
  EXPECT_EQ(ManifestToJson(listed->manifest),
            ManifestToJson(result_->manifest));
  EXPECT_TRUE(LooksLikeTar(result_->path));

  // One byte changed in the layer: its digest no longer matches.
  std::string bytes = dtf::testing::ReadFile(result_->path);
  const size_t at = bytes.size() / 2;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x40);
  const std::string bad = dir_->Join("bad.tar");
  ASSERT_TRUE(WriteFileAtomically(bad, bytes).ok());
  StatusOr<ImageResult> r = ListImage(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(Message(r.status())), HasSubstr(bad));
}

TEST_F(PackImageFixture, RootfsRunsWithItsOwnLoader) {
  ASSERT_NE(result_, nullptr);
  const std::string root = Rootfs();
  std::string loader;
  for (const ManifestFile& f : result_->manifest.files) {
    if (f.path.find("/ld-linux") != std::string::npos) loader = f.path;
  }
  ASSERT_FALSE(loader.empty());
  testing::Result r =
      testing::Sh(root, "env -i ./" + loader +
                            " --library-path usr/lib usr/bin/dtf --version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dtf "));
  // The loader and libraries in the rootfs are the ones used.
  r = testing::Sh(root, "env -i LD_DEBUG=libs ./" + loader +
                            " --library-path usr/lib usr/bin/dtf --version");
  EXPECT_THAT(r.err, HasSubstr("usr/lib/libc.so.6"));
  if (::geteuid() != 0) GTEST_SKIP() << "chroot needs root";
  r = testing::Sh(root,
                  "env -i \"$(command -v chroot)\" . /usr/bin/dtf --version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dtf "));
}

TEST_F(PackImageFixture, SkopeoInspectsIt) {
  ASSERT_NE(result_, nullptr);
  if (!HaveTool("skopeo")) GTEST_SKIP() << "skopeo not installed";
  testing::Result r = testing::Sh(
      dir_->path(), "skopeo inspect --config oci-archive:out/image.tar");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"/usr/bin/dtf\""));
  r = testing::Sh(dir_->path(), "skopeo inspect oci-archive:out/image.tar");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(result_->manifest_digest));
  EXPECT_THAT(r.out, HasSubstr(result_->layer_digest));
}

TEST_F(PackImageFixture, UmociUnpacksARunnableBundle) {
  ASSERT_NE(result_, nullptr);
  if (!HaveTool("umoci")) GTEST_SKIP() << "umoci not installed";
  testing::Result r = testing::Sh(
      dir_->path(),
      "rm -rf layout bundle && mkdir layout && tar -xf out/image.tar -C layout"
      " && umoci unpack --rootless --image 'layout:dtf:0.1.0-test' bundle");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(dtf::testing::ReadFile(dir_->Join("bundle/config.json")),
              HasSubstr("/usr/bin/dtf"));
  r = testing::Sh(dir_->Join("bundle/rootfs"),
                  "env -i ./lib64/ld-linux-x86-64.so.2 --library-path usr/lib "
                  "usr/bin/dtf --version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dtf "));
}

TEST_F(PackImageFixture, PodmanLoadsIt) {
  ASSERT_NE(result_, nullptr);
  if (!HaveTool("podman")) GTEST_SKIP() << "podman not installed";
  testing::Result info = testing::Sh(dir_->path(), "podman info");
  if (info.code != 0) GTEST_SKIP() << "podman does not work here: " << info.err;
  testing::Result r = testing::Sh(dir_->path(), "podman load -i out/image.tar");
  EXPECT_EQ(r.code, 0) << r.err;
  r = testing::Sh(dir_->path(),
                  "podman image inspect --format '{{.Config.Entrypoint}}' "
                  "localhost/dtf:0.1.0-test || podman image inspect --format "
                  "'{{.Config.Entrypoint}}' dtf:0.1.0-test");
  EXPECT_THAT(r.out, HasSubstr("/usr/bin/dtf"));
  testing::Sh(dir_->path(), "podman rmi -f dtf:0.1.0-test");
}

}  // namespace
}  // namespace dtf::pack
