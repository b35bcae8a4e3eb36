#include "lib/launch/pack/pack_env.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/unpack.h"
#include "tests/launch/pack/pack_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Packing the real dtf takes seconds; the tests share one archive.
class PackEnvTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new dtf::testing::TempDir("dtf_pack_env_test");
    PackEnvOptions options;
    options.binary = DTF_BINARY;
    options.dtf_version = "0.1.0-test";
    options.out_dir = dir_->Join("out");
    StatusOr<PackResult> r = PackEnv(options);
    ASSERT_TRUE(r.ok()) << r.status();
    result_ = new PackResult(*std::move(r));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  static const ManifestFile* Find(std::string_view path) {
    for (const ManifestFile& f : result_->manifest.files) {
      if (f.path == path) return &f;
    }
    return nullptr;
  }
  static const ManifestFile* FindPrefix(std::string_view prefix) {
    for (const ManifestFile& f : result_->manifest.files) {
      if (f.path.rfind(prefix, 0) == 0) return &f;
    }
    return nullptr;
  }

  static dtf::testing::TempDir* dir_;
  static PackResult* result_;
};
dtf::testing::TempDir* PackEnvTest::dir_ = nullptr;
PackResult* PackEnvTest::result_ = nullptr;

TEST_F(PackEnvTest, HoldsTheBinaryItsLibrariesAndALauncher) {
  ASSERT_NE(result_, nullptr);
  const Manifest& m = result_->manifest;
  EXPECT_EQ(m.kind, "env");
  EXPECT_EQ(m.dtf_version, "0.1.0-test");
  EXPECT_EQ(m.entry, "bin/dtf");
  EXPECT_FALSE(m.arch.empty());
  EXPECT_THAT(m.glibc, StartsWith("2."));
  ASSERT_NE(Find("bin/dtf"), nullptr);
  EXPECT_EQ(Find("bin/dtf")->mode, 0755u);
  ASSERT_NE(Find("libexec/dtf"), nullptr);
  EXPECT_EQ(Find("libexec/dtf")->mode, 0755u);
  EXPECT_EQ(Find("libexec/dtf")->sha256, DigestFile(DTF_BINARY)->sha256);
  ASSERT_NE(FindPrefix("lib/libgrpc++.so"), nullptr);
  EXPECT_EQ(FindPrefix("lib/libgrpc++.so")->mode, 0644u);
  EXPECT_NE(FindPrefix("lib/libstdc++.so"), nullptr);
  EXPECT_NE(FindPrefix("lib/libgcc_s.so"), nullptr);
  EXPECT_EQ(FindPrefix("lib/libc.so"), nullptr);
  EXPECT_EQ(FindPrefix("lib/libm.so"), nullptr);
  EXPECT_EQ(FindPrefix("lib/ld-linux"), nullptr);
  EXPECT_THAT(result_->archive.path, StartsWith(dir_->Join("out/dtf-env-")));
}

TEST_F(PackEnvTest, SameBinaryGivesTheSameArchive) {
  ASSERT_NE(result_, nullptr);
  PackEnvOptions options;
  options.binary = DTF_BINARY;
  options.dtf_version = "0.1.0-test";
  options.out_dir = dir_->Join("again");
  StatusOr<PackResult> again = PackEnv(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(fs::path(again->archive.path).filename(),
            fs::path(result_->archive.path).filename());
  EXPECT_EQ(again->archive.sha256, result_->archive.sha256);
  EXPECT_TRUE(dtf::testing::ReadFile(again->archive.path) ==
              dtf::testing::ReadFile(result_->archive.path));
}

TEST_F(PackEnvTest, ManifestDigestsVerify) {
  ASSERT_NE(result_, nullptr);
  StatusOr<ArchiveListing> listing = ListArchive(result_->archive.path);
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(listing->sha256, result_->archive.sha256);
  ASSERT_EQ(listing->manifest.files.size(), result_->manifest.files.size());
  EXPECT_EQ(ManifestToJson(listing->manifest),
            ManifestToJson(result_->manifest));
  // Each packed library is the file the loader would load.
  StatusOr<std::vector<ResolvedLibrary>> libs =
      ResolveDependencies(DTF_BINARY, LibrarySearch());
  ASSERT_TRUE(libs.ok()) << libs.status();
  for (const ResolvedLibrary& lib : *libs) {
    const ManifestFile* f = Find("lib/" + lib.name);
    ASSERT_NE(f, nullptr) << lib.name;
    EXPECT_EQ(f->sha256, DigestFile(lib.path)->sha256) << lib.name;
  }
}

TEST_F(PackEnvTest, UnpackedArchiveRunsWithAnEmptyEnvironment) {
  ASSERT_NE(result_, nullptr);
  const std::string root = dir_->Join("unpacked/dtf env");
  StatusOr<Manifest> m = UnpackArchive(result_->archive.path, root);
  ASSERT_TRUE(m.ok()) << m.status();
  for (const ManifestFile& f : m->files) {
    const std::string path = root + "/" + f.path;
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 07777, f.mode) << f.path;
    EXPECT_EQ(DigestFile(path)->sha256, f.sha256) << f.path;
  }
  testing::Result r =
      testing::Sh(dir_->path(),
                  "env -i PATH=/usr/bin:/bin '" + root + "/bin/dtf' --version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dtf "));

  // Moved elsewhere and run through a symbolic link, it still finds its
  // libraries.
  const std::string moved = dir_->Join("moved");
  fs::rename(root, moved);
  fs::create_directories(dir_->Join("links"));
  fs::create_symlink(moved + "/bin/dtf", dir_->Join("links/dtf"));
  r = testing::Sh(dir_->path(),
                  "env -i PATH=/usr/bin:/bin links/dtf --version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dtf "));
  // The packed libraries are the ones loaded.
  r = testing::Sh(dir_->path(),
                  "env -i PATH=/usr/bin:/bin LD_DEBUG=libs links/dtf "
                  "--version");
  EXPECT_THAT(r.err, HasSubstr(moved + "/lib/libgrpc++.so"));
}

TEST_F(PackEnvTest, StripDebugPacksARunnableSmallerBinary) {
  const char* path = std::getenv("PATH");
  if (!CanStripDebug(path != nullptr ? path : "/usr/bin:/bin"))
    GTEST_SKIP() << "objcopy (binutils) is not installed";
  ASSERT_NE(result_, nullptr);
  PackEnvOptions options;
  options.binary = DTF_BINARY;
  options.dtf_version = "0.1.0-test";
  options.out_dir = dir_->Join("stripped");
  options.strip_debug = true;
  StatusOr<PackResult> r = PackEnv(options);
  ASSERT_TRUE(r.ok()) << r.status();
  const ManifestFile* full = Find(kEnvBinary);
  const ManifestFile* stripped = nullptr;
  for (const ManifestFile& f : r->manifest.files) {
    if (f.path == kEnvBinary) stripped = &f;
  }
  ASSERT_NE(full, nullptr);
  ASSERT_NE(stripped, nullptr);
  EXPECT_LE(stripped->size, full->size);
  // Reproducible too, and no temporary copy is left behind.
  StatusOr<PackResult> again = PackEnv(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->archive.sha256, r->archive.sha256);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(options.out_dir)) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".zip") << e.path();
  }
  EXPECT_EQ(files, 1u);
  const std::string root = dir_->Join("stripped-unpacked");
  ASSERT_TRUE(UnpackArchive(r->archive.path, root).ok());
  testing::Result run =
      testing::Sh(dir_->path(),
                  "env -i PATH=/usr/bin:/bin '" + root + "/bin/dtf' --version");
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("dtf "));
}

TEST(PackEnv, NotAnElfBinary) {
  dtf::testing::TempDir dir;
  const std::string script = dir.Join("dtf");
  dtf::testing::WriteFile(script, "#!/bin/sh\n");
  PackEnvOptions options;
  options.binary = script;
  options.out_dir = dir.Join("out");
  StatusOr<PackResult> r = PackEnv(options);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(r.status()), script + ": not an ELF file");
  EXPECT_FALSE(fs::exists(dir.Join("out")));
}

TEST(PackEnv, LauncherIsPlainSh) {
  const std::string script = EnvLauncherScript();
  EXPECT_THAT(script, StartsWith("#!/bin/sh\n"));
  EXPECT_THAT(script, HasSubstr("exec \"$root/libexec/dtf\" \"$@\""));
}

}  // namespace
}  // namespace dtf::pack
