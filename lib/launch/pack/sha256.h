// SHA-256 digests, as 64 lowercase hex digits, over OpenSSL's libcrypto.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::pack {

// An incremental SHA-256. Not thread-safe. Errors from libcrypto come back
// as Internal naming "sha256".
class Sha256 {
 public:
  static StatusOr<Sha256> Create();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();

  Status Update(std::string_view data);
  // The digest of everything passed to Update. The object is spent after.
  StatusOr<std::string> HexDigest();

 private:
  struct Impl;
  explicit Sha256(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

StatusOr<std::string> Sha256Hex(std::string_view data);

// The size and digest of a file's contents, read in chunks.
struct FileDigest {
  uint64_t size = 0;
  std::string sha256;
};
// Errors name `path` (NotFound, PermissionDenied, ...).
StatusOr<FileDigest> DigestFile(const std::string& path);

}  // namespace dtf::pack
