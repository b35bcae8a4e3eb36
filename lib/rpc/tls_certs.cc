#include "lib/rpc/tls_certs.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "lib/base/strings.h"

namespace dtf::rpc {
namespace {

constexpr long kTlsNotBeforeSeconds = -3600;
constexpr long kTlsValiditySeconds = 30L * 24 * 3600;

struct TlsFree {
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(GENERAL_NAME* p) const { GENERAL_NAME_free(p); }
};
template <typename T>
using TlsPtr = std::unique_ptr<T, TlsFree>;

// `what` followed by OpenSSL's queued errors, oldest first; clears the
// queue.
Status TlsError(std::string_view what) {
  std::string reasons;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    StrAppend(&reasons, reasons.empty() ? "" : "; ", buf);
  }
  if (reasons.empty()) reasons = "unknown OpenSSL error";
  return InternalError(StrCat(what, ": ", reasons));
}

// The text between '[' and ']', or `host` itself.
std::string_view TlsUnbracket(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// `host` as a 4- or 16-byte address, or empty when it is no IP literal.
std::string TlsIpBytes(std::string_view host) {
  const std::string text(TlsUnbracket(host));
  unsigned char buf[16];
  if (inet_pton(AF_INET, text.c_str(), buf) == 1) {
    return std::string(reinterpret_cast<char*>(buf), 4);
  }
  if (inet_pton(AF_INET6, text.c_str(), buf) == 1) {
    return std::string(reinterpret_cast<char*>(buf), 16);
  }
  return "";
}

StatusOr<TlsPtr<EVP_PKEY>> TlsNewKey() {
  TlsPtr<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (key == nullptr) return TlsError("generating an EC P-256 key");
  return key;
}

StatusOr<std::string> TlsCertPem(X509* cert) {
  TlsPtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return TlsError("writing a certificate as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(n));
}

StatusOr<std::string> TlsKeyPem(EVP_PKEY* key) {
  TlsPtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return TlsError("writing a private key as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(n));
}

// A certificate with a random serial, subject CN `common_name`, validity
// from kTlsNotBeforeSeconds to kTlsValiditySeconds from now, and public key
// `key`; neither issuer nor extensions yet.
StatusOr<TlsPtr<X509>> TlsNewCert(std::string_view common_name, EVP_PKEY* key) {
  TlsPtr<X509> cert(X509_new());
  TlsPtr<BIGNUM> serial(BN_new());
  if (cert == nullptr || serial == nullptr ||
      X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) ==
          nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), kTlsNotBeforeSeconds) ==
          nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), kTlsValiditySeconds) ==
          nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return TlsError("making a certificate");
  }
  const std::string cn(common_name);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_UTF8,
          reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) != 1) {
    return TlsError(StrCat("certificate subject CN ", QuoteForMessage(cn)));
  }
  return cert;
}

// Adds extension `nid` with OpenSSL's configuration text `value` ("critical,
// CA:TRUE") to `cert`, issued by `issuer`.
Status TlsAddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  TlsPtr<X509_EXTENSION> ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return TlsError(
        StrCat("certificate extension ", OBJ_nid2sn(nid), " = ", value));
  }
  return OkStatus();
}

Status TlsAddName(GENERAL_NAMES* names, std::string_view host) {
  TlsPtr<GENERAL_NAME> name(GENERAL_NAME_new());
  if (name == nullptr) return TlsError("subject alternative name");
  const std::string ip = TlsIpBytes(host);
  ASN1_STRING* value =
      ASN1_STRING_type_new(ip.empty() ? V_ASN1_IA5STRING : V_ASN1_OCTET_STRING);
  const std::string& bytes = ip.empty() ? std::string(host) : ip;
  if (value == nullptr ||
      ASN1_STRING_set(value, bytes.data(), int(bytes.size())) != 1) {
    ASN1_STRING_free(value);
    return TlsError(StrCat("subject alternative name ", host));
  }
  GENERAL_NAME_set0_value(name.get(), ip.empty() ? GEN_DNS : GEN_IPADD, value);
  if (sk_GENERAL_NAME_push(names, name.get()) == 0) {
    return TlsError(StrCat("subject alternative name ", host));
  }
  name.release();
  return OkStatus();
}

StatusOr<Pem> TlsSigned(X509* cert, EVP_PKEY* signer, EVP_PKEY* key) {
  if (X509_sign(cert, signer, EVP_sha256()) == 0) {
    return TlsError("signing a certificate");
  }
  Pem pem;
  DTF_ASSIGN_OR_RETURN(pem.cert, TlsCertPem(cert));
  DTF_ASSIGN_OR_RETURN(pem.key, TlsKeyPem(key));
  return pem;
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string ip = TlsIpBytes(host);
  if (ip.size() == 4) return ip[0] == 127;
  if (ip.size() == 16) return ip == std::string(15, '\0') + '\1';
  return false;
}

StatusOr<Pem> MakeRunCa(std::string_view run_id) {
  DTF_ASSIGN_OR_RETURN(TlsPtr<EVP_PKEY> key, TlsNewKey());
  DTF_ASSIGN_OR_RETURN(
      TlsPtr<X509> cert,
      TlsNewCert(StrCat("dtf run ", run_id, " CA"), key.get()));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) !=
      1) {
    return TlsError("CA certificate issuer");
  }
  X509* c = cert.get();
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, c, NID_basic_constraints, "critical,CA:TRUE"));
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, c, NID_key_usage, "critical,keyCertSign,cRLSign"));
  DTF_RETURN_IF_ERROR(TlsAddExt(c, c, NID_subject_key_identifier, "hash"));
  return TlsSigned(c, key.get(), key.get());
}

StatusOr<Pem> IssueCert(const Pem& ca, std::string_view common_name,
                        const std::vector<std::string>& hosts) {
  TlsPtr<BIO> cert_bio(BIO_new_mem_buf(ca.cert.data(), int(ca.cert.size())));
  TlsPtr<BIO> key_bio(BIO_new_mem_buf(ca.key.data(), int(ca.key.size())));
  if (cert_bio == nullptr || key_bio == nullptr) {
    return TlsError("reading the CA");
  }
  TlsPtr<X509> ca_cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  TlsPtr<EVP_PKEY> ca_key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (ca_cert == nullptr || ca_key == nullptr) {
    Status status = TlsError("the CA's certificate or key is no PEM");
    return InvalidArgumentError(Message(status));
  }
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgumentError("the CA's key does not match its certificate");
  }
  for (const std::string& host : hosts) {
    if (TlsUnbracket(host).empty()) {
      return InvalidArgumentError(
          StrCat("certificate for ", common_name, ": an empty host name"));
    }
  }

  DTF_ASSIGN_OR_RETURN(TlsPtr<EVP_PKEY> key, TlsNewKey());
  DTF_ASSIGN_OR_RETURN(TlsPtr<X509> cert, TlsNewCert(common_name, key.get()));
  X509* c = cert.get();
  if (X509_set_issuer_name(c, X509_get_subject_name(ca_cert.get())) != 1 ||
      X509_set1_notBefore(c, X509_get0_notBefore(ca_cert.get())) != 1 ||
      X509_set1_notAfter(c, X509_get0_notAfter(ca_cert.get())) != 1) {
    return TlsError("certificate issuer");
  }
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, ca_cert.get(), NID_key_usage, "critical,digitalSignature"));
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth"));
  DTF_RETURN_IF_ERROR(
      TlsAddExt(c, ca_cert.get(), NID_subject_key_identifier, "hash"));
  DTF_RETURN_IF_ERROR(TlsAddExt(c, ca_cert.get(), NID_authority_key_identifier,
                                "keyid:always"));

  TlsPtr<GENERAL_NAMES> names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return TlsError("subject alternative names");
  std::vector<std::string> added;
  bool all_loopback = true;
  auto add = [&](std::string_view host) -> Status {
    const std::string h(TlsUnbracket(host));
    for (const std::string& a : added) {
      if (a == h) return OkStatus();
    }
    added.push_back(h);
    return TlsAddName(names.get(), h);
  };
  for (const std::string& host : hosts) {
    all_loopback = all_loopback && IsLoopbackHost(host);
    DTF_RETURN_IF_ERROR(add(host));
  }
  DTF_RETURN_IF_ERROR(add("localhost"));
  if (all_loopback) DTF_RETURN_IF_ERROR(add("127.0.0.1"));
  if (X509_add1_ext_i2d(c, NID_subject_alt_name, names.get(), 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return TlsError("subject alternative names");
  }
  return TlsSigned(c, ca_key.get(), key.get());
}

}  // namespace dtf::rpc
