// The Session over TLS from a caller's side, frame by frame: who the
// server admits (a certificate of the run's CA naming a worker, then the
// run's credentials in the first frame), and what it refuses (each with a
// status frame that says why, or a handshake that fails).
#include "lib/runtime/ps/ps_tls_server.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/rpc/tls_certs.h"
#include "lib/rpc/tls_stream.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/ps_tls_frames.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

rpc::TlsMaterial Issue(const rpc::Pem& ca, const std::string& name) {
  StatusOr<rpc::Pem> cert = rpc::IssueCert(ca, name, {"127.0.0.1"});
  EXPECT_TRUE(cert.ok()) << cert.status();
  return {ca.cert, cert->cert, cert->key};
}

class PsTlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.Join("job.toml");
    dtf::testing::WriteFile(path, R"(
[schema]
label = "label"
columns = ["label:int", "x:float"]

[[features.numeric]]
name = "x"

[model]
type = "linear"

[train]
mode = "sync"
)");
    StatusOr<JobFile> job = LoadJobFile(path);
    ASSERT_TRUE(job.ok()) << job.status();
    StoreOptions options;
    options.num_ps = 1;
    options.num_workers = 1;
    StatusOr<std::unique_ptr<ParamStore>> store =
        ParamStore::Create(*job, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    StatusOr<rpc::Pem> ca = rpc::MakeRunCa("test-run");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    creds_ = {"test-run", kSecret, "job-1"};
    StatusOr<std::unique_ptr<PsTlsServer>> server = PsTlsServer::Start(
        "127.0.0.1", Issue(ca_, "ps-0"), creds_, store_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  StatusOr<std::unique_ptr<rpc::TlsStream>> Connect(
      const rpc::TlsMaterial& as) {
    return rpc::TlsConnect(StrCat("127.0.0.1:", server_->port()), as, "ps-0",
                           seconds(5), seconds(5));
  }

  // The server's answer to `caller`'s hello.
  Status Hello(rpc::TlsStream& stream, const rpc::CallerIdentity& caller) {
    DTF_RETURN_IF_ERROR(WriteHelloFrame(stream, caller));
    DTF_ASSIGN_OR_RETURN(Frame frame, ReadFrame(stream, 4096));
    if (frame.kind != FrameKind::kStatus) return InternalError("no status");
    return frame.status;
  }

  rpc::CallerIdentity Me() const {
    return {"1", creds_.run_id, creds_.secret, creds_.job};
  }

  dtf::testing::TempDir dir_;
  std::unique_ptr<ParamStore> store_;
  rpc::Pem ca_;
  rpc::RunCredentials creds_;
  std::unique_ptr<PsTlsServer> server_;
};

TEST_F(PsTlsServerTest, AWorkerWithTheRunsCredentialsIsAdmitted) {
  StatusOr<std::unique_ptr<rpc::TlsStream>> stream =
      Connect(Issue(ca_, "worker-3"));
  ASSERT_TRUE(stream.ok()) << stream.status();
  EXPECT_TRUE(Hello(**stream, Me()).ok());
}

// The run's secret, run id, protocol version and job are checked as a gRPC
// call's metadata are; a refused caller learns why and nothing more.
TEST_F(PsTlsServerTest, WrongCredentialsAreRefusedWithTheReason) {
  struct Case {
    rpc::CallerIdentity caller;
    StatusCode code;
    std::string says;
  };
  rpc::CallerIdentity secret = Me(), run = Me(), version = Me(), job = Me();
  secret.secret = "ffeeddccbbaa99887766554433221100";
  run.run_id = "another-run";
  version.version = "0";
  job.job = "job-2";
  for (const Case& c :
       {Case{secret, StatusCode::kPermissionDenied, "wrong run id or secret"},
        Case{run, StatusCode::kPermissionDenied, "wrong run id or secret"},
        Case{version, StatusCode::kFailedPrecondition, "protocol version"},
        Case{job, StatusCode::kFailedPrecondition, "job mismatch"}}) {
    StatusOr<std::unique_ptr<rpc::TlsStream>> stream =
        Connect(Issue(ca_, "worker-0"));
    ASSERT_TRUE(stream.ok()) << stream.status();
    Status st = Hello(**stream, c.caller);
    EXPECT_EQ(st.code(), c.code) << st;
    EXPECT_THAT(std::string(Message(st)), HasSubstr(c.says));
    // The server closed the stream.
    char byte;
    EXPECT_FALSE((*stream)->ReadAll(&byte, 1).ok());
  }
}

// Only a worker's certificate of this run's CA opens a stream: a PS's (or
// the chief's name spelled otherwise) and another run's CA are dropped at
// the handshake, before a byte of a frame is read.
TEST_F(PsTlsServerTest, OnlyAWorkersCertificateOfTheRunsCaIsAccepted) {
  StatusOr<rpc::Pem> other = rpc::MakeRunCa("other-run");
  ASSERT_TRUE(other.ok()) << other.status();
  const rpc::TlsMaterial strangers[] = {
      Issue(ca_, "ps-1"), Issue(ca_, "worker-"), Issue(ca_, "worker-1x"),
      Issue(*other, "worker-0")};
  for (const rpc::TlsMaterial& as : strangers) {
    StatusOr<std::unique_ptr<rpc::TlsStream>> stream = Connect(as);
    // TLS 1.3: the client may finish its side before the server refuses;
    // then its first read fails.
    if (stream.ok()) {
      Status st = Hello(**stream, Me());
      EXPECT_FALSE(st.ok());
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (server_->rejected() < 4 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(server_->rejected(), 4);
}

// A stream must begin with a hello; a step message first is refused.
TEST_F(PsTlsServerTest, AStreamWithoutAHelloIsRefused) {
  StatusOr<std::unique_ptr<rpc::TlsStream>> stream =
      Connect(Issue(ca_, "worker-0"));
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::vector<grpc::ByteBuffer> messages(1);
  grpc::Slice slice(std::string("x"));
  messages[0] = grpc::ByteBuffer(&slice, 1);
  ASSERT_TRUE(WriteMessageFrames(**stream, messages).ok());
  StatusOr<Frame> frame = ReadFrame(**stream, 4096);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ASSERT_EQ(frame->kind, FrameKind::kStatus);
  EXPECT_EQ(frame->status.code(), StatusCode::kPermissionDenied)
      << frame->status;
}

// A frame longer than a PS request may be is refused from its header,
// before its bytes are read into memory; the stream says so and ends.
TEST_F(PsTlsServerTest, AFrameLongerThanTheLimitIsRefusedUnread) {
  StatusOr<std::unique_ptr<rpc::TlsStream>> stream =
      Connect(Issue(ca_, "worker-0"));
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(Hello(**stream, Me()).ok());
  // A header claiming 1 GiB, and no body.
  const char header[] = {char(FrameKind::kMessage), 0, 0, 0, 0x40};
  ASSERT_TRUE((*stream)->WriteAll(header, sizeof(header)).ok());
  StatusOr<Frame> frame = ReadFrame(**stream, 4096);
  ASSERT_TRUE(frame.ok()) << frame.status();
  ASSERT_EQ(frame->kind, FrameKind::kStatus);
  EXPECT_EQ(frame->status.code(), StatusCode::kResourceExhausted)
      << frame->status;
  EXPECT_THAT(std::string(Message(frame->status)), HasSubstr("1073741824"));
}

}  // namespace
}  // namespace dtf::runtime
