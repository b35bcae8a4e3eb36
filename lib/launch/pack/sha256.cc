#include "lib/launch/pack/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "lib/base/strings.h"

namespace dtf::pack {
namespace {

// The last libcrypto error as a Status; libcrypto's codes stop here.
Status CryptoError(std::string_view what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return InternalError(StrCat("sha256: ", what, ": ", text));
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

StatusOr<Sha256> Sha256::Create() {
  auto impl = std::make_unique<Impl>();
  impl->ctx = EVP_MD_CTX_new();
  if (impl->ctx == nullptr) return CryptoError("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(impl->ctx, EVP_sha256(), nullptr) != 1) {
    return CryptoError("EVP_DigestInit_ex");
  }
  return Sha256(std::move(impl));
}

Status Sha256::Update(std::string_view data) {
  if (EVP_DigestUpdate(impl_->ctx, data.data(), data.size()) != 1) {
    return CryptoError("EVP_DigestUpdate");
  }
  return OkStatus();
}

StatusOr<std::string> Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, digest, &length) != 1) {
    return CryptoError("EVP_DigestFinal_ex");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

StatusOr<std::string> Sha256Hex(std::string_view data) {
  DTF_ASSIGN_OR_RETURN(Sha256 sha, Sha256::Create());
  DTF_RETURN_IF_ERROR(sha.Update(data));
  return sha.HexDigest();
}

StatusOr<FileDigest> DigestFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ErrnoToStatus(errno, path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
  DTF_ASSIGN_OR_RETURN(Sha256 sha, Sha256::Create());
  FileDigest out;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), f);
    if (n > 0) {
      DTF_RETURN_IF_ERROR(sha.Update(std::string_view(buffer.data(), n)));
      out.size += n;
    }
    if (n < buffer.size()) {
      if (std::ferror(f)) return ErrnoToStatus(errno, path);
      break;
    }
  }
  DTF_ASSIGN_OR_RETURN(out.sha256, sha.HexDigest());
  return out;
}

}  // namespace dtf::pack
