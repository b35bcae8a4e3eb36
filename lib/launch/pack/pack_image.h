// dtf pack image: the runtime as an OCI image archive (an OCI image layout
// in a tar file, what `skopeo copy oci-archive:FILE` and `podman load -i`
// read), one layer on no base image. The layer holds everything dtf needs
// to start on a bare kernel:
//
//   usr/bin/dtf                   the dtf binary, unchanged
//   usr/lib/<soname>              every shared library it needs, glibc's
//                                 included (not the GPU driver's: the node's
//                                 driver is mounted in by the runtime)
//   <PT_INTERP>                   the dynamic loader, at the path the binary
//                                 names (lib64/ld-linux-x86-64.so.2)
//   usr/share/dtf/manifest.json   what `dtf pack list` checks (manifest.h)
//   tmp/                          mode 1777
//
// The archive is reproducible: the layer tar has mtime 0 and uid/gid 0,
// gzip has no timestamp, the config has no creation time, and every blob
// is named by its SHA-256.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/pack/elf_deps.h"
#include "lib/launch/pack/manifest.h"

namespace dtf::pack {

inline constexpr char kImageBinary[] = "usr/bin/dtf";
inline constexpr char kImageLibDir[] = "usr/lib";
inline constexpr char kImageManifest[] = "usr/share/dtf/manifest.json";

struct PackImageOptions {
  // The dtf binary (the running one). Required.
  std::string binary;
  // Its version: the manifest's and the default tag's. Required.
  std::string dtf_version;
  // Where libraries are looked for; `exclude` is replaced by
  // IsGpuDriverLibrary (glibc goes in).
  LibrarySearch search;
  // The image's name ("dtf:1.4.0"). Default: DefaultImageTag(dtf_version).
  std::string tag;
  // The archive's path. Required.
  std::string output;
};

// Whether a DT_NEEDED name is the GPU driver's (libcuda, libnvidia-*),
// which the container runtime provides from the node.
bool IsGpuDriverLibrary(std::string_view name);

// "dtf:<version>", with characters a tag cannot hold ('+', ...) as '-'.
std::string DefaultImageTag(std::string_view dtf_version);

struct ImageResult {
  std::string path;
  std::string tag;
  std::string manifest_digest;  // "sha256:..." of the image manifest
  std::string config_digest;
  std::string layer_digest;  // of the compressed layer
  uint64_t layer_size = 0;   // compressed
  uint64_t size = 0;         // the archive
  Manifest manifest;         // dtf's manifest of the layer's files
};

// Builds the archive and writes it to options.output atomically. Errors:
// those of ResolveDependencies and ReadElfFile, the file system's naming
// the file.
StatusOr<ImageResult> PackImage(const PackImageOptions& options);

// Reads an archive PackImage wrote (or any single-layer-set OCI archive
// holding usr/share/dtf/manifest.json): checks every blob's digest, the
// layer's files against the manifest, and gives them. DataLoss "<path>: ..."
// for whatever does not match.
StatusOr<ImageResult> ListImage(const std::string& path);

// Whether `path` starts like a tar file (a ustar magic at offset 257).
bool LooksLikeTar(const std::string& path);

}  // namespace dtf::pack
