// Reading dtf's archives back: listing with verification, and unpacking on
// the host that runs them (the SSH backend calls UnpackArchive on remote
// hosts through `dtf`). Both check every entry against manifest.json.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/pack/manifest.h"

namespace dtf::pack {

struct ArchiveListing {
  std::string path;
  // The archive's own SHA-256 and size.
  std::string sha256;
  uint64_t size = 0;
  Manifest manifest;
};

// Reads `zip_path` and checks it: a manifest.json that parses, and exactly
// the entries it lists, each a plain file of the listed size, SHA-256 and
// mode. Errors: the file system's (NotFound, ...) naming the archive;
// DataLoss "<archive>: <entry>: ..." for anything that does not match.
StatusOr<ArchiveListing> ListArchive(const std::string& zip_path);

// Unpacks `zip_path` into `dest_dir` (created when missing) after the
// checks of ListArchive, restoring each file's mode (0755 or 0644). Files
// are extracted under a staging directory in `dest_dir`, verified, and only
// then renamed into place, replacing files of the same names: an archive
// that fails a check changes nothing in `dest_dir`, and the staging
// directory never outlives the call. Returns the manifest.
StatusOr<Manifest> UnpackArchive(const std::string& zip_path,
                                 const std::string& dest_dir);

// Checks an unpacked archive in `dir` against its manifest.json: every
// listed file present with its size, SHA-256 and mode (what the SSH backend
// runs on a host after copying an archive's files there). DataLoss
// "<dir>/<path>: ..." for the first that does not match.
StatusOr<Manifest> VerifyTree(const std::string& dir);

}  // namespace dtf::pack
