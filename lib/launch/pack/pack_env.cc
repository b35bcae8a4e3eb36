#include "lib/launch/pack/pack_env.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"

extern char** environ;

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

// The version in a library's file name: libcudart.so.12.2.140 -> 12.2.140.
// The real file's name says most; the soname gives at least the major.
std::string LibraryVersion(const ResolvedLibrary& lib) {
  std::error_code ec;
  const fs::path real = fs::canonical(lib.path, ec);
  for (const std::string& file :
       {ec ? std::string() : real.filename().string(), lib.name}) {
    const size_t so = file.find(".so.");
    if (so != std::string::npos) return file.substr(so + 4);
  }
  return "";
}

}  // namespace

std::string EnvLauncherScript() {
  return R"(#!/bin/sh
# dtf launcher (dtf pack env): runs the packed dtf with the shared libraries
# packed beside it, from wherever the archive was unpacked. Symbolic links to
# this file work; the real path decides where the libraries are.
self=$(readlink -f -- "$0") || exit 127
root=${self%/bin/*}
LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec "$root/libexec/dtf" "$@"
)";
}

std::string GlibcVersionNeeded(const ElfFile& elf) {
  std::string best;
  for (const ElfFile::VersionNeed& need : elf.version_needs) {
    for (const std::string& v : need.versions) {
      if (!v.starts_with("GLIBC_") || v.size() <= 6 || v[6] < '0' ||
          v[6] > '9') {
        continue;  // GLIBC_PRIVATE, GLIBCXX_*, ...
      }
      const std::string number = v.substr(6);
      if (best.empty() || CompareVersions(number, best) > 0) best = number;
    }
  }
  return best;
}

namespace {

// Runs `objcopy --strip-debug from to`.
Status StripDebugCopy(const std::string& from, const std::string& to) {
  const char* argv[] = {"objcopy", "--strip-debug", from.c_str(), to.c_str(),
                        nullptr};
  pid_t pid = 0;
  const int e = ::posix_spawnp(&pid, "objcopy", nullptr, nullptr,
                               const_cast<char* const*>(argv), environ);
  if (e != 0) return ErrnoToStatus(e, "objcopy (binutils)");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError(StrCat("objcopy --strip-debug ", from, " ", to,
                                " failed (status ", status, ")"));
  }
  return OkStatus();
}

}  // namespace

bool CanStripDebug(std::string_view search_path) {
  while (!search_path.empty()) {
    const size_t colon = search_path.find(':');
    const std::string dir(search_path.substr(0, colon));
    if (!dir.empty() && ::access((dir + "/objcopy").c_str(), X_OK) == 0) {
      return true;
    }
    search_path = colon == std::string_view::npos
                      ? std::string_view()
                      : search_path.substr(colon + 1);
  }
  return false;
}

StatusOr<PackResult> PackEnv(const PackEnvOptions& options) {
  if (options.binary.empty()) {
    return InvalidArgumentError("dtf pack env: no binary to pack");
  }
  DTF_ASSIGN_OR_RETURN(const ElfFile binary, ReadElfFile(options.binary));
  if (binary.interpreter.empty()) {
    return InvalidArgumentError(
        StrCat(options.binary, ": not an executable (it has no PT_INTERP)"));
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<ResolvedLibrary> libraries,
                       ResolveDependencies(options.binary, options.search));

  Manifest manifest;
  manifest.kind = kKindEnv;
  manifest.dtf_version = options.dtf_version;
  manifest.arch = MachineName(binary.machine);
  manifest.entry = kEnvLauncher;
  manifest.glibc = GlibcVersionNeeded(binary);

  ZipWriter zip;
  auto add_file = [&](const std::string& entry, const std::string& source,
                      uint32_t mode) -> Status {
    DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(source));
    DTF_RETURN_IF_ERROR(zip.AddFile(entry, source, mode));
    manifest.files.push_back({entry, digest.size, digest.sha256, mode});
    return OkStatus();
  };
  const std::string launcher = EnvLauncherScript();
  DTF_ASSIGN_OR_RETURN(const std::string launcher_sha, Sha256Hex(launcher));
  DTF_RETURN_IF_ERROR(zip.AddBytes(kEnvLauncher, launcher, kModeExecutable));
  manifest.files.push_back(
      {kEnvLauncher, launcher.size(), launcher_sha, kModeExecutable});
  std::string binary_file = options.binary;
  std::string stripped;
  struct Remove {
    std::string* path;
    ~Remove() {
      if (!path->empty()) ::unlink(path->c_str());
    }
  } remove_stripped{&stripped};
  if (options.strip_debug) {
    std::error_code ec;
    fs::create_directories(options.out_dir, ec);
    stripped = StrCat(options.out_dir, "/.dtf-stripped-", ::getpid());
    DTF_RETURN_IF_ERROR(StripDebugCopy(options.binary, stripped));
    binary_file = stripped;
  }
  DTF_RETURN_IF_ERROR(add_file(kEnvBinary, binary_file, kModeExecutable));
  for (const ResolvedLibrary& lib : libraries) {
    const std::string file = fs::path(lib.name).filename().string();
    DTF_RETURN_IF_ERROR(
        add_file(StrCat(kEnvLibDir, "/", file), lib.path, kModeFile));
    const std::string glibc = GlibcVersionNeeded(lib.elf);
    if (!glibc.empty() && (manifest.glibc.empty() ||
                           CompareVersions(glibc, manifest.glibc) > 0)) {
      manifest.glibc = glibc;
    }
    if (file.starts_with("libcudart.so")) manifest.cuda = LibraryVersion(lib);
    if (file.starts_with("libnccl.so")) manifest.nccl = LibraryVersion(lib);
  }
  return WriteArchive(&zip, std::move(manifest), options.out_dir,
                      kEnvArchivePrefix);
}

StatusOr<PackResult> WriteArchive(ZipWriter* zip, Manifest manifest,
                                  const std::string& out_dir,
                                  std::string_view prefix) {
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) {
              return a.path < b.path;
            });
  DTF_RETURN_IF_ERROR(
      zip->AddBytes(kManifestName, ManifestToJson(manifest), kModeFile));
  PackResult result;
  DTF_ASSIGN_OR_RETURN(result.archive, zip->Write(out_dir, prefix));
  result.manifest = std::move(manifest);
  return result;
}

}  // namespace dtf::pack
