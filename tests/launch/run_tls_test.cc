// The run's TLS material as the launcher makes, writes and ships it, and
// dtf status talking to a chief over mutual TLS.
#include "lib/launch/run_tls.h"

#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_status.h"
#include "lib/launch/status_client.h"
#include "lib/rpc/credentials.h"
#include "proto/dtf.grpc.pb.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

int ModeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

// Whether certificate `pem` verifies against `ca_pem` and names `host`.
bool CertFor(const std::string& ca_pem, const std::string& pem,
             const std::string& host) {
  auto parse = [](const std::string& text) {
    BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return cert;
  };
  X509* ca = parse(ca_pem);
  X509* leaf = parse(pem);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  const bool verified = X509_verify_cert(ctx) == 1;
  const bool named =
      X509_check_host(leaf, host.c_str(), host.size(), 0, nullptr) == 1 ||
      X509_check_ip_asc(leaf, host.c_str(), 0) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(leaf);
  X509_free(ca);
  return verified && named;
}

Plan TwoHostPlan() {
  Plan plan;
  plan.run_id = "20260101-120000-abcd";
  plan.backend = BackendKind::kSsh;
  plan.ps = 1;
  plan.workers = 2;
  auto add = [&](const char* role, int index, const char* host) {
    TaskPlan t;
    t.role = *ParseRoleName(role);
    t.index = index;
    t.host = host;
    plan.tasks.push_back(t);
  };
  add("ps", 0, "10.0.0.7");
  add("worker", 0, "10.0.0.7");
  add("worker", 1, "gpu-b.example");
  return plan;
}

std::vector<std::string> Names(const std::vector<TlsFile>& files) {
  std::vector<std::string> out;
  for (const TlsFile& f : files) out.push_back(f.name);
  return out;
}

TEST(RunTls, ACertificatePerTaskForItsHost) {
  const Plan plan = TwoHostPlan();
  StatusOr<RunTls> tls = MakeRunTls(plan);
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_EQ(tls->certs.size(), 4u);
  EXPECT_TRUE(CertFor(tls->ca.cert, tls->certs.at("ps-0").cert, "10.0.0.7"));
  EXPECT_TRUE(
      CertFor(tls->ca.cert, tls->certs.at("worker-0").cert, "10.0.0.7"));
  EXPECT_TRUE(
      CertFor(tls->ca.cert, tls->certs.at("worker-1").cert, "gpu-b.example"));
  EXPECT_FALSE(
      CertFor(tls->ca.cert, tls->certs.at("worker-1").cert, "10.0.0.7"));
  EXPECT_TRUE(
      CertFor(tls->ca.cert, tls->certs.at(kTlsLauncherName).cert, "localhost"));
}

// A host gets the CA's certificate and its own tasks' files: never the CA's
// key, nor another host's keys.
TEST(RunTls, AHostGetsOnlyItsOwnTasksFiles) {
  const Plan plan = TwoHostPlan();
  StatusOr<RunTls> tls = MakeRunTls(plan);
  ASSERT_TRUE(tls.ok()) << tls.status();
  const std::vector<TlsFile> a =
      HostTlsFiles(*tls, {&plan.tasks[0], &plan.tasks[1]});
  EXPECT_THAT(Names(a), ElementsAre("ca.pem", "ps-0.pem", "ps-0.key",
                                    "worker-0.pem", "worker-0.key"));
  EXPECT_EQ(a[0].contents, tls->ca.cert);
  EXPECT_EQ(a[2].contents, tls->certs.at("ps-0").key);
  const std::vector<TlsFile> b = HostTlsFiles(*tls, {&plan.tasks[2]});
  EXPECT_THAT(Names(b), ElementsAre("ca.pem", "worker-1.pem", "worker-1.key"));
  for (const TlsFile& f : a) EXPECT_NE(f.contents, tls->ca.key) << f.name;
  for (const TlsFile& f : b) EXPECT_NE(f.contents, tls->ca.key) << f.name;
}

// Kubernetes: every certificate names its task, there is none for the
// launcher, and what the pods share holds no CA key.
TEST(RunTls, TaskNamedCertificatesForPodsThatShareADirectory) {
  StatusOr<RunTls> tls = MakeTaskNamedTls("20260101-120000-abcd",
                                          {"ps-0", "worker-0", "worker-1"});
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_EQ(tls->certs.size(), 3u);
  EXPECT_TRUE(CertFor(tls->ca.cert, tls->certs.at("ps-0").cert, "ps-0"));
  EXPECT_TRUE(
      CertFor(tls->ca.cert, tls->certs.at("worker-1").cert, "worker-1"));
  EXPECT_FALSE(
      CertFor(tls->ca.cert, tls->certs.at("worker-1").cert, "worker-0"));
  const std::vector<TlsFile> files = TaskTlsFiles(*tls);
  EXPECT_THAT(Names(files),
              ElementsAre("ca.pem", "ps-0.pem", "ps-0.key", "worker-0.pem",
                          "worker-0.key", "worker-1.pem", "worker-1.key"));
  for (const TlsFile& f : files) EXPECT_NE(f.contents, tls->ca.key) << f.name;
  // AllTlsFiles is the same with the CA's key second.
  EXPECT_THAT(
      Names(AllTlsFiles(*tls)),
      ElementsAre("ca.pem", "ca.key", "ps-0.pem", "ps-0.key", "worker-0.pem",
                  "worker-0.key", "worker-1.pem", "worker-1.key"));
}

TEST(RunTls, WrittenPrivateToTheLauncher) {
  dtf::testing::TempDir dir("dtf_run_tls_test");
  StatusOr<RunTls> tls = MakeRunTls(TwoHostPlan());
  ASSERT_TRUE(tls.ok()) << tls.status();
  const std::string tls_dir = TlsDirOf(dir.path());
  ASSERT_TRUE(WriteRunTls(*tls, tls_dir).ok());
  EXPECT_EQ(ModeOf(tls_dir), 0700);
  EXPECT_EQ(ModeOf(tls_dir + "/ca.key"), 0600);
  EXPECT_EQ(ModeOf(tls_dir + "/worker-1.key"), 0600);
  EXPECT_EQ(ModeOf(tls_dir + "/launcher.key"), 0600);
  EXPECT_EQ(ModeOf(tls_dir + "/ca.pem") & 0077, 0044);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tls_dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(
      names, ElementsAre("ca.key", "ca.pem", "launcher.key", "launcher.pem",
                         "ps-0.key", "ps-0.pem", "worker-0.key", "worker-0.pem",
                         "worker-1.key", "worker-1.pem"));
  StatusOr<std::string> key = ReadFileToString(tls_dir + "/worker-1.key");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, tls->certs.at("worker-1").key);
  StatusOr<LauncherTls> launcher = ReadLauncherTls(tls_dir);
  ASSERT_TRUE(launcher.ok()) << launcher.status();
  EXPECT_EQ(launcher->cert, tls->certs.at(kTlsLauncherName).cert);
  EXPECT_EQ(launcher->ca_cert, tls->ca.cert);
  // Never over an existing directory.
  EXPECT_EQ(WriteRunTls(*tls, tls_dir).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadLauncherTls(dir.Join("none")).status().code(),
            StatusCode::kNotFound);
}

// A resumed run gets new TLS material with its new secret.
TEST(RunTls, ReopeningARunDirRemovesIt) {
  dtf::testing::TempDir dir("dtf_run_tls_test");
  StatusOr<std::string> id = CreateRunDir(dir.path(), "20260101-120000-abcd");
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = dir.Join(*id);
  StatusOr<RunTls> tls = MakeRunTls(TwoHostPlan());
  ASSERT_TRUE(tls.ok());
  ASSERT_TRUE(WriteRunTls(*tls, TlsDirOf(run_dir)).ok());
  ASSERT_TRUE(ReopenRunDir(dir.path(), *id).ok());
  EXPECT_FALSE(fs::exists(TlsDirOf(run_dir)));
}

// Answers Status for any caller that got through the TLS handshake.
class TlsCoordinator final : public rpc::Coordinator::Service {
  grpc::Status Status(grpc::ServerContext*, const rpc::StatusRequest*,
                      rpc::StatusResponse* response) override {
    response->set_global_step(77);
    response->set_state("running");
    return grpc::Status::OK;
  }
};

std::unique_ptr<grpc::Server> StartTlsServer(TlsCoordinator* service,
                                             const std::string& tls_dir,
                                             const std::string& name,
                                             int* port) {
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = *ReadFileToString(tls_dir + "/ca.pem");
  options.pem_key_cert_pairs.push_back(
      {*ReadFileToString(StrCat(tls_dir, "/", name, ".key")),
       *ReadFileToString(StrCat(tls_dir, "/", name, ".pem"))});
  grpc::ServerBuilder builder;
  builder.AddListeningPort(StrCat("127.0.0.1:", *port),
                           grpc::SslServerCredentials(options), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

// A local run with tls = true: the launcher writes the run's tls/, every
// task is started with --tls-dir, and dtf status reaches the chief (a
// stand-in serving with the chief's certificate) over mutual TLS.
TEST(RunTls, ALocalRunWithTls) {
  dtf::testing::TempDir dir("dtf_run_tls_test");
  const std::string binary = testing::WriteStandIn(dir);
  RunOptions o;
  o.grace = 300ms;
  o.poll = 10ms;
  // The stand-in chief reports a free port as its address, held here
  // while the run chooses its own ports; the chief's server takes it once
  // the run has made the chief's certificate.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(sa);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length), 0);
  const int port = ntohs(sa.sin_port);
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      testing::Request(dir, binary,
                       StrCat("ps = 1\nworkers = 2\ntls = true\n[env]\n"
                              "STANDIN_CHIEF_SLEEP = \"60\"\n"
                              "STANDIN_CHIEF_ADDRESS = \"127.0.0.1:",
                              port, "\"\n")),
      o);
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  const Plan& plan = r.plan();
  EXPECT_TRUE(plan.tls);
  const std::string tls_dir = TlsDirOf(plan.run_dir);
  EXPECT_EQ(ModeOf(tls_dir), 0700);
  EXPECT_EQ(ModeOf(tls_dir + "/ca.key"), 0600);
  for (const TaskPlan& t : plan.tasks) {
    const std::string name = TaskDirName(t.role, t.index);
    EXPECT_EQ(ModeOf(StrCat(tls_dir, "/", name, ".key")), 0600) << name;
    StatusOr<std::string> argv = ReadFileToString(t.dir + "/argv");
    ASSERT_TRUE(argv.ok()) << argv.status();
    EXPECT_THAT(*argv, HasSubstr(StrCat("--tls-dir\n", tls_dir, "\n"))) << name;
  }
  StatusOr<std::string> json = ReadFileToString(plan.run_dir + "/plan.json");
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, HasSubstr("\"tls\": true"));

  ::close(fd);
  TlsCoordinator service;
  int bound = port;
  std::unique_ptr<grpc::Server> chief =
      StartTlsServer(&service, tls_dir, "worker-0", &bound);
  ASSERT_TRUE(chief != nullptr);
  if (bound != port) {
    // The port was taken in between: nothing to test against.
    chief->Shutdown();
    r.Stop(CancelledError("test over"));
    GTEST_SKIP() << "port " << port << " was taken by another process (got "
                 << bound << ")";
  }
  StatusOr<RunStatus> status = CollectRunStatus(plan.run_dir, 30s);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->from_chief) << status->chief_error;
  EXPECT_EQ(status->global_step, 77);

  // Without the run's certificates the chief is not reached.
  StatusOr<std::string> secret = rpc::ReadSecretFile(plan.secret_file);
  ASSERT_TRUE(secret.ok());
  StatusOr<CoordinatorStatus> plain =
      QueryCoordinator(StrCat("127.0.0.1:", port), plan.run_id, *secret, 2s);
  EXPECT_FALSE(plain.ok());
  // Nor with another run's.
  StatusOr<RunTls> stranger = MakeRunTls(plan);
  ASSERT_TRUE(stranger.ok());
  const ClientTls foreign{
      stranger->ca.cert, stranger->certs.at(kTlsLauncherName).cert,
      stranger->certs.at(kTlsLauncherName).key, "127.0.0.1"};
  StatusOr<CoordinatorStatus> refused = QueryCoordinator(
      StrCat("127.0.0.1:", port), plan.run_id, *secret, 2s, &foreign);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable)
      << refused.status();
  chief->Shutdown();
  r.Stop(CancelledError("test over"));
}

}  // namespace
}  // namespace dtf::launch
