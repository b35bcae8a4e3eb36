#include "lib/rpc/tls_certs.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::rpc {
namespace {

struct X509Deleter {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

X509Ptr ParseCert(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), int(pem.size())), BIO_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

// X509_verify_cert's result for `leaf` against a store holding `ca` alone,
// for the purpose `purpose` (X509_PURPOSE_SSL_SERVER / _CLIENT).
int Verify(const Pem& ca, const Pem& leaf, int purpose) {
  X509Ptr ca_cert = ParseCert(ca.cert);
  X509Ptr leaf_cert = ParseCert(leaf.cert);
  EXPECT_NE(ca_cert, nullptr);
  EXPECT_NE(leaf_cert, nullptr);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca_cert.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf_cert.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const int ok = X509_verify_cert(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

// The subject alternative names, as "DNS:name" and "IP:address".
std::vector<std::string> AltNames(const Pem& leaf) {
  X509Ptr cert = ParseCert(leaf.cert);
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* s = name->d.dNSName;
      out.push_back("DNS:" + std::string(reinterpret_cast<const char*>(
                                             ASN1_STRING_get0_data(s)),
                                         size_t(ASN1_STRING_length(s))));
    } else if (name->type == GEN_IPADD) {
      const ASN1_STRING* s = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6,
                ASN1_STRING_get0_data(s), text, sizeof(text));
      out.push_back(std::string("IP:") + text);
    } else {
      out.push_back("other");
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::string SubjectCn(const Pem& pem) {
  X509Ptr cert = ParseCert(pem.cert);
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName,
                            buf, sizeof(buf));
  return buf;
}

TEST(TlsCerts, CaIsACa) {
  StatusOr<Pem> ca = MakeRunCa("20260101-abcd");
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_EQ(SubjectCn(*ca), "dtf run 20260101-abcd CA");
  X509Ptr cert = ParseCert(ca->cert);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  const int bc = X509_get_ext_by_NID(cert.get(), NID_basic_constraints, -1);
  ASSERT_GE(bc, 0);
  EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(cert.get(), bc)), 1);
  EXPECT_NE(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN, 0u);
  EXPECT_NE(ca->key.find("BEGIN PRIVATE KEY"), std::string::npos);
  // Two CAs never share a serial.
  StatusOr<Pem> other = MakeRunCa("20260101-abcd");
  ASSERT_TRUE(other.ok());
  X509Ptr other_cert = ParseCert(other->cert);
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(cert.get()),
                             X509_get0_serialNumber(other_cert.get())),
            0);
}

TEST(TlsCerts, LeafVerifiesAgainstItsCaOnly) {
  StatusOr<Pem> ca = MakeRunCa("run-a");
  StatusOr<Pem> other_ca = MakeRunCa("run-b");
  ASSERT_TRUE(ca.ok() && other_ca.ok());
  StatusOr<Pem> leaf = IssueCert(*ca, "ps-0", {"10.0.0.7"});
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(SubjectCn(*leaf), "ps-0");
  EXPECT_EQ(Verify(*ca, *leaf, X509_PURPOSE_SSL_SERVER), 1);
  EXPECT_EQ(Verify(*ca, *leaf, X509_PURPOSE_SSL_CLIENT), 1);
  EXPECT_NE(Verify(*other_ca, *leaf, X509_PURPOSE_SSL_SERVER), 1);
  X509Ptr cert = ParseCert(leaf->cert);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
}

TEST(TlsCerts, AltNamesAreTheHostsAndLocalhost) {
  StatusOr<Pem> ca = MakeRunCa("run");
  ASSERT_TRUE(ca.ok());
  StatusOr<Pem> leaf =
      IssueCert(*ca, "worker-1", {"10.0.0.7", "gpu-3.example", "[fe80::2]"});
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(AltNames(*leaf),
            (std::vector<std::string>{"IP:10.0.0.7", "DNS:gpu-3.example",
                                      "IP:fe80::2", "DNS:localhost"}));
  X509Ptr cert = ParseCert(leaf->cert);
  EXPECT_EQ(X509_check_host(cert.get(), "gpu-3.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "gpu-4.example", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.7", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 0);
}

TEST(TlsCerts, LoopbackHostsAlsoGet127001) {
  StatusOr<Pem> ca = MakeRunCa("run");
  ASSERT_TRUE(ca.ok());
  StatusOr<Pem> leaf = IssueCert(*ca, "ps-0", {"127.0.0.2", "localhost"});
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(AltNames(*leaf),
            (std::vector<std::string>{"IP:127.0.0.2", "DNS:localhost",
                                      "IP:127.0.0.1"}));
}

TEST(TlsCerts, BadInput) {
  StatusOr<Pem> ca = MakeRunCa("run");
  StatusOr<Pem> other = MakeRunCa("other");
  ASSERT_TRUE(ca.ok() && other.ok());
  StatusOr<Pem> no_pem = IssueCert(Pem{"junk", "junk"}, "ps-0", {"a"});
  EXPECT_EQ(no_pem.status().code(), StatusCode::kInvalidArgument);
  StatusOr<Pem> mismatch = IssueCert(Pem{ca->cert, other->key}, "ps-0", {"a"});
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("does not match"),
            absl::string_view::npos);
  StatusOr<Pem> empty = IssueCert(*ca, "ps-0", {""});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

TEST(TlsCerts, IsLoopbackHost) {
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.3.0.9"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.7"));
  EXPECT_FALSE(IsLoopbackHost("::2"));
  EXPECT_FALSE(IsLoopbackHost("gpu-3"));
  EXPECT_FALSE(IsLoopbackHost(""));
}

// A Coordinator that answers Heartbeat.
class HeartbeatOnly final : public Coordinator::Service {
  grpc::Status Heartbeat(grpc::ServerContext*, const HeartbeatRequest*,
                         HeartbeatResponse*) override {
    return grpc::Status::OK;
  }
};

// A server on 127.0.0.1 presenting `server`, requiring a client certificate
// signed by `ca`.
class TlsServer {
 public:
  TlsServer(const Pem& ca, const Pem& server) {
    grpc::SslServerCredentialsOptions options(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.pem_root_certs = ca.cert;
    options.pem_key_cert_pairs.push_back({server.key, server.cert});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(options),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~TlsServer() {
    if (server_) server_->Shutdown();
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  HeartbeatOnly service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

grpc::Status CallHeartbeat(const std::string& address,
                           const grpc::SslCredentialsOptions& options) {
  auto channel = grpc::CreateChannel(address, grpc::SslCredentials(options));
  auto stub = Coordinator::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  HeartbeatRequest request;
  HeartbeatResponse response;
  return stub->Heartbeat(&context, request, &response);
}

TEST(TlsCerts, GrpcMutualTls) {
  StatusOr<Pem> ca = MakeRunCa("run-a");
  StatusOr<Pem> other_ca = MakeRunCa("run-b");
  ASSERT_TRUE(ca.ok() && other_ca.ok());
  StatusOr<Pem> server = IssueCert(*ca, "ps-0", {"127.0.0.1"});
  StatusOr<Pem> client = IssueCert(*ca, "worker-0", {"127.0.0.1"});
  StatusOr<Pem> stranger = IssueCert(*other_ca, "worker-0", {"127.0.0.1"});
  ASSERT_TRUE(server.ok() && client.ok() && stranger.ok());
  TlsServer tls_server(*ca, *server);
  ASSERT_TRUE(tls_server.ok());

  grpc::SslCredentialsOptions good;
  good.pem_root_certs = ca->cert;
  good.pem_private_key = client->key;
  good.pem_cert_chain = client->cert;
  grpc::Status status = CallHeartbeat(tls_server.address(), good);
  EXPECT_TRUE(status.ok()) << status.error_message();

  // A certificate from another run's CA: the server refuses the handshake.
  grpc::SslCredentialsOptions foreign = good;
  foreign.pem_private_key = stranger->key;
  foreign.pem_cert_chain = stranger->cert;
  status = CallHeartbeat(tls_server.address(), foreign);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();

  // No client certificate at all.
  grpc::SslCredentialsOptions anonymous;
  anonymous.pem_root_certs = ca->cert;
  status = CallHeartbeat(tls_server.address(), anonymous);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();

  // A client that trusts another run's CA refuses this server.
  grpc::SslCredentialsOptions wrong_root = good;
  wrong_root.pem_root_certs = other_ca->cert;
  status = CallHeartbeat(tls_server.address(), wrong_root);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST(TlsCerts, GrpcChecksTheServerName) {
  StatusOr<Pem> ca = MakeRunCa("run");
  ASSERT_TRUE(ca.ok());
  // A server certificate for another host does not pass for 127.0.0.1.
  StatusOr<Pem> server = IssueCert(*ca, "ps-0", {"10.0.0.7"});
  StatusOr<Pem> client = IssueCert(*ca, "worker-0", {"127.0.0.1"});
  ASSERT_TRUE(server.ok() && client.ok());
  TlsServer tls_server(*ca, *server);
  ASSERT_TRUE(tls_server.ok());
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca->cert;
  options.pem_private_key = client->key;
  options.pem_cert_chain = client->cert;
  grpc::Status status = CallHeartbeat(tls_server.address(), options);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

}  // namespace
}  // namespace dtf::rpc
