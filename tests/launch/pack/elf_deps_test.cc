#include "lib/launch/pack/elf_deps.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/pack/pack_env.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> Names(const std::vector<ResolvedLibrary>& libs) {
  std::vector<std::string> names;
  for (const ResolvedLibrary& l : libs) names.push_back(l.name);
  return names;
}

bool HasPrefix(const std::vector<std::string>& names, std::string_view p) {
  for (const std::string& n : names) {
    if (n.rfind(p, 0) == 0) return true;
  }
  return false;
}

TEST(ElfFile, ReadsTheDtfBinary) {
  StatusOr<ElfFile> elf = ReadElfFile(DTF_BINARY);
  ASSERT_TRUE(elf.ok()) << elf.status();
  EXPECT_FALSE(elf->interpreter.empty());
  EXPECT_TRUE(HasPrefix(elf->needed, "libc.so."));
  EXPECT_FALSE(elf->version_needs.empty());
  const std::string glibc = GlibcVersionNeeded(*elf);
  EXPECT_EQ(glibc.rfind("2.", 0), 0u) << glibc;
}

TEST(ElfFile, ErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string text = dir.Join("lib.so");
  testing::WriteFile(text, "#!/bin/sh\necho not an ELF file\n");
  StatusOr<ElfFile> elf = ReadElfFile(text);
  EXPECT_EQ(elf.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(elf.status()), text + ": not an ELF file");

  const std::string truncated = dir.Join("truncated.so");
  testing::WriteFile(truncated, testing::ReadFile(DTF_BINARY).substr(0, 100));
  elf = ReadElfFile(truncated);
  EXPECT_EQ(elf.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(elf.status()), HasSubstr(truncated + ": "));

  elf = ReadElfFile(dir.Join("missing.so"));
  EXPECT_EQ(elf.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(elf.status()), HasSubstr("missing.so"));
}

TEST(ElfDeps, ResolvesTheDtfBinary) {
  StatusOr<std::vector<ResolvedLibrary>> libs =
      ResolveDependencies(DTF_BINARY, LibrarySearch());
  ASSERT_TRUE(libs.ok()) << libs.status();
  const std::vector<std::string> names = Names(*libs);
  EXPECT_TRUE(HasPrefix(names, "libgrpc++.so"))
      << ::testing::PrintToString(names);
  EXPECT_TRUE(HasPrefix(names, "libprotobuf.so"));
  EXPECT_TRUE(HasPrefix(names, "libstdc++.so"));
  EXPECT_TRUE(HasPrefix(names, "libgcc_s.so"));
  // Indirect needs are followed: gRPC's own libraries.
  EXPECT_TRUE(HasPrefix(names, "libgpr.so"));
  for (const std::string& n : names) {
    EXPECT_FALSE(IsBaseSystemLibrary(n)) << n;
  }
  EXPECT_FALSE(HasPrefix(names, "libc.so"));
  EXPECT_FALSE(HasPrefix(names, "ld-linux"));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const ResolvedLibrary& l : *libs) {
    EXPECT_TRUE(fs::exists(l.path)) << l.path;
    EXPECT_FALSE(l.needed_by.empty());
  }
}

TEST(ElfDeps, LibraryPathComesBeforeTheSystemDirectories) {
  StatusOr<std::vector<ResolvedLibrary>> libs =
      ResolveDependencies(DTF_BINARY, LibrarySearch());
  ASSERT_TRUE(libs.ok()) << libs.status();
  const ResolvedLibrary* libstdcxx = nullptr;
  for (const ResolvedLibrary& l : *libs) {
    if (l.name.rfind("libstdc++.so", 0) == 0) libstdcxx = &l;
  }
  ASSERT_NE(libstdcxx, nullptr);
  testing::TempDir dir;
  fs::copy_file(libstdcxx->path, dir.Join(libstdcxx->name));
  // Not an ELF file of the binary's kind: skipped, as ld.so skips it.
  testing::TempDir decoy;
  testing::WriteFile(decoy.Join(libstdcxx->name), "not a library");

  LibrarySearch search;
  search.library_path = {decoy.path(), dir.path()};
  libs = ResolveDependencies(DTF_BINARY, search);
  ASSERT_TRUE(libs.ok()) << libs.status();
  for (const ResolvedLibrary& l : *libs) {
    if (l.name == libstdcxx->name) {
      EXPECT_EQ(l.path, dir.Join(libstdcxx->name));
    }
  }
}

TEST(ElfDeps, MissingLibraryNamesWhoNeedsIt) {
  LibrarySearch search;
  search.ld_so_conf = "";
  search.default_dirs = {"/nonexistent"};
  StatusOr<std::vector<ResolvedLibrary>> libs =
      ResolveDependencies(DTF_BINARY, search);
  EXPECT_EQ(libs.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(libs.status()),
              HasSubstr(std::string("(needed by ") + DTF_BINARY +
                        "): not found in /nonexistent"));
}

TEST(ElfDeps, BaseSystemLibraries) {
  for (const char* name :
       {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
        "libresolv.so.2", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
        "libnss_files.so.2", "libcuda.so.1", "libnvidia-ml.so.1"}) {
    EXPECT_TRUE(IsBaseSystemLibrary(name)) << name;
  }
  for (const char* name :
       {"libstdc++.so.6", "libgcc_s.so.1", "libz.so.1", "libssh.so.4",
        "libgrpc++.so.1.51", "libcudart.so.12", "libnccl.so.2",
        "libcrypto.so.3", "libmagic.so.1"}) {
    EXPECT_FALSE(IsBaseSystemLibrary(name)) << name;
  }
}

TEST(ElfDeps, ReadsLdSoConfWithIncludes) {
  testing::TempDir dir;
  fs::create_directories(dir.Join("conf.d"));
  testing::WriteFile(dir.Join("ld.so.conf"),
                     "# comment\n/opt/a\ninclude conf.d/*.conf\n"
                     "  /opt/b  # trailing\n\nhwcap 0 nosegneg\n");
  testing::WriteFile(dir.Join("conf.d/1.conf"), "/opt/c\n");
  testing::WriteFile(dir.Join("conf.d/2.conf"), "/opt/d=libc5\n");
  EXPECT_THAT(ReadLdSoConf(dir.Join("ld.so.conf")),
              ::testing::ElementsAre("/opt/a", "/opt/c", "/opt/d", "/opt/b"));
  EXPECT_TRUE(ReadLdSoConf(dir.Join("none.conf")).empty());
}

}  // namespace
}  // namespace dtf::pack
