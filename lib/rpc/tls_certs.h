// The certificates of a run's mutual TLS (docs/protocol.md, "Transport
// security"): the launcher makes a certificate authority for the run and
// issues from it one certificate per task, which the task presents both as
// a server and as a client. Keys are EC P-256; certificates are signed with
// SHA-256. Everything is PEM text; nothing here touches the disk or gRPC.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::rpc {

// A certificate and its private key, both PEM (the key as PKCS#8).
struct Pem {
  std::string cert;
  std::string key;
};

// A new CA for run `run_id`: subject CN "dtf run <run_id> CA", CA:TRUE
// (critical), key usage keyCertSign and cRLSign, a random 128-bit serial,
// valid from an hour ago (clock skew between hosts) for 30 days.
// InternalError with OpenSSL's reason when OpenSSL fails.
StatusOr<Pem> MakeRunCa(std::string_view run_id);

// A new leaf certificate with subject CN `common_name`, signed by `ca` (as
// MakeRunCa returns it): CA:FALSE, key usage digitalSignature, extended key
// usage serverAuth and clientAuth, the CA's validity. Its subject
// alternative names: each of `hosts` (an IP entry for an IPv4 or IPv6
// literal, bare or in brackets, a DNS entry otherwise), then DNS "localhost",
// then IP 127.0.0.1 when every host is a loopback one (loopback addresses
// and "localhost"). InvalidArgument when `ca` does not parse or its key does
// not match its certificate, or a host is empty; InternalError when OpenSSL
// fails.
StatusOr<Pem> IssueCert(const Pem& ca, std::string_view common_name,
                        const std::vector<std::string>& hosts);

// Whether `host` is "localhost" or a loopback address (127.0.0.0/8, ::1,
// bare or in brackets).
bool IsLoopbackHost(std::string_view host);

}  // namespace dtf::rpc
