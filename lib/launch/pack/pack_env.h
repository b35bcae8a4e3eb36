// dtf pack env: the relocatable runtime archive (docs/pack.md). It holds
// the dtf binary, every shared library it needs beyond the base system
// (elf_deps.h), a launcher that runs the binary with those libraries from
// wherever the archive was unpacked, and manifest.json.
//
//   bin/dtf          launcher (POSIX sh): execs libexec/dtf with
//                    LD_LIBRARY_PATH=<root>/lib prepended
//   libexec/dtf      the dtf binary, unchanged
//   lib/<soname>     each library under the name the loader looks for
//   manifest.json
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/pack/elf_deps.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/zip_writer.h"

namespace dtf::pack {

inline constexpr char kEnvArchivePrefix[] = "dtf-env-";
inline constexpr char kEnvLauncher[] = "bin/dtf";
inline constexpr char kEnvBinary[] = "libexec/dtf";
inline constexpr char kEnvLibDir[] = "lib";

struct PackEnvOptions {
  // The dtf binary to pack (the running one: /proc/self/exe). Required.
  std::string binary;
  // Its version, for the manifest. Required.
  std::string dtf_version;
  // Where its libraries are looked for. Default: as ld.so looks.
  LibrarySearch search;
  // Where the archive goes. Default: .dtf/pack.
  std::string out_dir = ".dtf/pack";
  // Pack the binary without its debug sections (`objcopy --strip-debug`
  // into a temporary copy; symbols stay). A debug build's binary is then a
  // tenth of its size. Default: false, the binary unchanged.
  bool strip_debug = false;
};

// Whether `objcopy` (binutils), which strip_debug needs, is in one of the
// ':'-separated directories of `search_path` (the PATH that strip_debug's
// objcopy is looked up in; cmd/ passes $PATH, or "/usr/bin:/bin" when it is
// unset).
bool CanStripDebug(std::string_view search_path);

struct PackResult {
  WrittenArchive archive;
  Manifest manifest;
};

// Finishes an archive of either kind: sorts the manifest's files, adds
// manifest.json and writes the zip under `out_dir` (ZipWriter::Write).
StatusOr<PackResult> WriteArchive(ZipWriter* zip, Manifest manifest,
                                  const std::string& out_dir,
                                  std::string_view prefix);

// Packs and writes the archive. Errors: those of ResolveDependencies,
// the file system's naming the file, and ZipWriter::Write's.
StatusOr<PackResult> PackEnv(const PackEnvOptions& options);

// The text of bin/dtf.
std::string EnvLauncherScript();

// The highest GLIBC_x.y version `elf` needs ("" when none).
std::string GlibcVersionNeeded(const ElfFile& elf);

}  // namespace dtf::pack
