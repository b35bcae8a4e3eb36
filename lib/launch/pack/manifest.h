// manifest.json, the first thing a reader checks in a dtf archive
// (docs/pack.md): what kind of archive it is, what it needs of a host, and
// the size, SHA-256 and permissions of every other entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

inline constexpr int kManifestFormat = 1;
inline constexpr char kKindEnv[] = "env";
inline constexpr char kKindJob[] = "job";

struct ManifestFile {
  std::string path;  // the entry's name in the archive
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
  uint32_t mode = 0;   // 0755 or 0644
};

struct Manifest {
  int format = kManifestFormat;
  // kKindEnv or kKindJob.
  std::string kind;
  // The dtf that made the archive (for env archives: the packed dtf).
  std::string dtf_version;
  // env: the packed binary's machine ("x86_64").
  std::string arch;
  // env: the highest GLIBC_x.y symbol version the packed ELF files need;
  // the host's glibc must be at least this. "" when none is needed.
  std::string glibc;
  // env: the CUDA runtime and NCCL versions of the packed libcudart and
  // libnccl ("12.2.140"; the soname's major when the file name says no
  // more); "" when not linked.
  std::string cuda;
  std::string nccl;
  // What to run or read: env: "bin/dtf"; job: the job file's entry.
  std::string entry;
  // job: whether the data (CSV files, records) went in.
  bool with_data = false;
  // Every entry but manifest.json, sorted by path.
  std::vector<ManifestFile> files;
};

// Pretty-printed JSON with a fixed key order and a final newline: the same
// manifest always gives the same bytes.
std::string ManifestToJson(const Manifest& manifest);

// Reads what ManifestToJson writes. DataLoss "<name>: ..." when it is not
// JSON, misses a field, holds a field of the wrong type, an unknown format
// or kind, an entry name that is not relative, a malformed digest or a
// mode other than 0755/0644.
StatusOr<Manifest> ParseManifest(std::string_view json, std::string_view name);

// What dtf pack prints with --json, for a written or a listed archive:
// {"archive": path, "sha256": ..., "size": ..., "manifest": {...}}.
std::string ArchiveSummaryToJson(const std::string& path,
                                 const std::string& sha256, uint64_t size,
                                 const Manifest& manifest);

// "0755" for 0755.
std::string ModeString(uint32_t mode);

// Compares dotted version numbers numerically ("2.9" < "2.17"): <0, 0, >0.
int CompareVersions(std::string_view a, std::string_view b);

}  // namespace dtf::pack
