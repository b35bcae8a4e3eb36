// The shared libraries an ELF program needs, found as the dynamic loader
// (ld.so(8)) finds them, minus the ones every host has: glibc's own
// libraries, and the GPU driver's, which must match the host's kernel.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/pack/elf_file.h"

namespace dtf::pack {

// Whether a DT_NEEDED name belongs to the base system and is never packed:
// glibc's libraries (libc, libm, libpthread, libdl, librt, libresolv,
// libutil, libanl, libnsl, libmvec, libBrokenLocale, libthread_db,
// libc_malloc_debug, libnss_*, the ld.so loaders) and the GPU driver's
// (libcuda, libnvidia-*). libstdc++ and libgcc_s are not base: remote hosts
// may have older ones.
bool IsBaseSystemLibrary(std::string_view name);

// Where to look, in ld.so's order (ld.so(8)): DT_RPATH of the needing object
// and the objects that loaded it (only while it has no DT_RUNPATH),
// `library_path`, DT_RUNPATH of the needing object, the directories of
// `ld_so_conf` (what /etc/ld.so.cache is built from), `default_dirs`.
struct LibrarySearch {
  // LD_LIBRARY_PATH's entries. Default: none.
  std::vector<std::string> library_path;
  // The loader's configuration; `include` lines are followed. "" reads none.
  // Default: /etc/ld.so.conf.
  std::string ld_so_conf = "/etc/ld.so.conf";
  // Searched last. Default: the loader's trusted directories for 64-bit
  // glibc systems.
  std::vector<std::string> default_dirs = {"/lib64", "/usr/lib64", "/lib",
                                           "/usr/lib"};
  // Names not packed and not followed. Default: IsBaseSystemLibrary.
  std::function<bool(std::string_view)> exclude = IsBaseSystemLibrary;
};

struct ResolvedLibrary {
  // The DT_NEEDED name ("libgrpc++.so.1.51"), under which ld.so looks for it.
  std::string name;
  // Where it was found (may be a symbolic link).
  std::string path;
  // The first object found needing it.
  std::string needed_by;
  ElfFile elf;
};

// Every library `binary` needs, directly or not, except excluded ones,
// sorted by name. A candidate of another ELF class or machine is skipped, as
// ld.so skips it. Errors: those of ReadElfFile for `binary` or a found
// library; NotFound "<name> (needed by <object>): not found in <dirs>" for a
// library found nowhere.
StatusOr<std::vector<ResolvedLibrary>> ResolveDependencies(
    const std::string& binary, const LibrarySearch& search);

// The directories named by an ld.so.conf file, in order, with `include`
// globs followed (relative ones against the file's directory). A missing
// file gives none.
std::vector<std::string> ReadLdSoConf(const std::string& path);

}  // namespace dtf::pack
