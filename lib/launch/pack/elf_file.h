// What the dynamic loader reads from an ELF file: its class and machine, the
// libraries it needs (DT_NEEDED), where to look for them (DT_RPATH,
// DT_RUNPATH), and the symbol versions it needs from each (.gnu.version_r,
// found through DT_VERNEED). Read through the program headers, as ld.so
// does, so stripped files read the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

struct ElfFile {
  // ELFCLASS32 or ELFCLASS64.
  int elf_class = 0;
  // e_machine: EM_X86_64, EM_AARCH64, ...
  uint16_t machine = 0;
  // PT_INTERP: the program interpreter; empty for shared libraries.
  std::string interpreter;
  // DT_SONAME; empty when absent.
  std::string soname;
  // DT_NEEDED, in file order.
  std::vector<std::string> needed;
  // DT_RPATH and DT_RUNPATH split at ':', tokens ($ORIGIN) unexpanded.
  std::vector<std::string> rpath;
  std::vector<std::string> runpath;
  bool has_runpath = false;
  // DT_VERNEED: for each needed file, the version names it needs from it
  // ("libc.so.6" -> {"GLIBC_2.2.5", "GLIBC_2.34"}).
  struct VersionNeed {
    std::string file;
    std::vector<std::string> versions;
  };
  std::vector<VersionNeed> version_needs;
};

// Reads `path`. Errors name the file: NotFound/PermissionDenied from the
// file system; InvalidArgument "<path>: not an ELF file" for anything else;
// DataLoss "<path>: ..." for an ELF file whose headers or dynamic section
// point outside it. Only the host's byte order is read (InvalidArgument
// otherwise).
StatusOr<ElfFile> ReadElfFile(const std::string& path);

// "x86_64", "aarch64", ... for an e_machine; "machine-<n>" for others.
std::string MachineName(uint16_t machine);

}  // namespace dtf::pack
