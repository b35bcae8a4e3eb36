#include <filesystem>

#include "lib/base/bounded_read.h"
#include "lib/base/strings.h"
#include "lib/rpc/credentials.h"

namespace dtf::rpc {

namespace {
// PEM files of one certificate or key are a few kilobytes.
constexpr size_t kMaxPemBytes = 64 << 10;
}  // namespace

StatusOr<TlsMaterial> ReadTlsDir(const std::string& dir,
                                 const std::string& name) {
  const std::filesystem::path base(dir);
  TlsMaterial tls;
  DTF_ASSIGN_OR_RETURN(
      tls.ca_pem,
      ReadFileToStringAtMost((base / "ca.pem").string(), kMaxPemBytes));
  DTF_ASSIGN_OR_RETURN(
      tls.cert_pem, ReadFileToStringAtMost(
                        (base / StrCat(name, ".pem")).string(), kMaxPemBytes));
  DTF_ASSIGN_OR_RETURN(
      tls.key_pem,
      ReadPrivateFile((base / StrCat(name, ".key")).string(), kMaxPemBytes));
  for (const auto& [file, text] : {std::pair{"ca.pem", &tls.ca_pem},
                                   std::pair{"certificate", &tls.cert_pem},
                                   std::pair{"key", &tls.key_pem}}) {
    if (text->find("-----BEGIN ") == std::string::npos) {
      return InvalidArgumentError(
          StrCat(dir, ": the ", file, " of ", name, " holds no PEM block"));
    }
  }
  return tls;
}

}  // namespace dtf::rpc
