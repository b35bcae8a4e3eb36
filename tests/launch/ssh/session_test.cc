// Session::Connect and Exec against real OpenSSH servers: authentication,
// connection failures, the client configuration, ProxyJump, keepalives.
#include "lib/launch/ssh/session.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "lib/base/strings.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch::ssh::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

size_t Count(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

TEST(Target, Label) {
  Target target;
  target.host = "10.0.0.5";
  EXPECT_EQ(target.Label(), "10.0.0.5");
  target.user = "ada";
  target.port = 22;
  EXPECT_EQ(target.Label(), "ada@10.0.0.5:22");
}

using SessionTest = SshdTest;

TEST_F(SessionTest, ExecReturnsStatusOutputAndErrors) {
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->user(), LocalUser());
  EXPECT_EQ(session->host_key().type, "ssh-ed25519");
  EXPECT_THAT(session->host_key().fingerprint,
              ::testing::StartsWith("SHA256:"));

  auto result = session->Exec("echo out; echo err >&2; exit 3", seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_status, 3);
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");

  result = session->Exec("tr a-z A-Z", seconds(10), "hello\nworld");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_status, 0);
  EXPECT_EQ(result->out, "HELLO\nWORLD");

  result = session->Exec("kill -9 $$", seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_status, -1);
}

TEST_F(SessionTest, ExecMovesLargeInputAndOutput) {
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  auto result = session->Exec("head -c 5000000 /dev/zero", seconds(30));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out.size(), 5000000u);
  std::string input(3 << 20, 'x');
  result = session->Exec("wc -c", seconds(30), input);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, StrCat(input.size(), "\n"));
}

TEST_F(SessionTest, ExecTimesOutAndTheSessionGoesOn) {
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  // The command would run a minute (and stops once its output goes
  // nowhere); the call ends at its 500 ms timeout, far inside the 30 s
  // allowed here.
  const std::string command =
      "for i in $(seq 300); do printf . || exit; sleep 0.2; done";
  auto start = std::chrono::steady_clock::now();
  auto result = session->Exec(command, milliseconds(500));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(result.status().code(), StatusCode::kDeadlineExceeded)
      << result.status();
  EXPECT_THAT(Message(result.status()), HasSubstr(command));
  EXPECT_THAT(Message(result.status()), HasSubstr(sshd_->target().Label()));
  EXPECT_LT(took, seconds(30));
  result = session->Exec("echo again", seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "again\n");
}

TEST_F(SessionTest, WrongKeyIsPermissionDenied) {
  std::string key = dir_.Join("other_key");
  ASSERT_EQ(system(StrCat("ssh-keygen -q -t ed25519 -N '' -f ", key).c_str()),
            0);
  Target target = sshd_->target();
  target.identity_file = key;
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kPermissionDenied)
      << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr("no key was accepted"));
  EXPECT_THAT(Message(session.status()), HasSubstr(key));
  EXPECT_THAT(Message(session.status()), HasSubstr(target.Label()));
}

TEST_F(SessionTest, EncryptedKeyFailsWithoutPrompting) {
  std::string key = dir_.Join("encrypted_key");
  ASSERT_EQ(
      system(StrCat("ssh-keygen -q -t ed25519 -N secret -f ", key, " && cat ",
                    key, ".pub >> ", dir_.path(), "/authorized_keys")
                 .c_str()),
      0);
  Target target = sshd_->target();
  target.identity_file = key;
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kPermissionDenied)
      << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr("ssh-agent"));
}

TEST_F(SessionTest, MissingIdentityFileIsNamed) {
  Target target = sshd_->target();
  target.identity_file = dir_.Join("no_such_key");
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kNotFound) << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr(target.identity_file));
}

TEST_F(SessionTest, RefusedPortIsUnavailable) {
  Target target = sshd_->target();
  ClosedPort closed(target.host);
  ASSERT_GT(closed.port(), 0);
  target.port = closed.port();
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kUnavailable)
      << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr(target.Label()));
}

TEST_F(SessionTest, UnknownHostNameIsUnavailable) {
  Target target = sshd_->target();
  target.host = "no-such-host.invalid";
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kUnavailable)
      << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr(target.Label()));
}

TEST_F(SessionTest, SilentHostIsDeadlineExceeded) {
  // Accepts TCP connections (the kernel does) but never says anything.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
  socklen_t length = sizeof(sa);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length), 0);
  Target target = sshd_->target();
  target.port = ntohs(sa.sin_port);
  target.connect_timeout = milliseconds(1000);
  auto start = std::chrono::steady_clock::now();
  auto session = Session::Connect(target);
  auto took = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_EQ(session.status().code(), StatusCode::kDeadlineExceeded)
      << session.status();
  // It waited for the connect timeout, and gave up then: a silent host
  // would otherwise hold it forever.
  EXPECT_GE(took, milliseconds(900));
  EXPECT_LT(took, seconds(30));
}

TEST_F(SessionTest, ConfigHostAliasResolves) {
  std::string config = dir_.Join("ssh_config");
  dtf::testing::WriteFile(
      config, StrCat("Host myalias\n  HostName ", sshd_->address(), "\n  Port ",
                     sshd_->port(), "\n  User ", LocalUser(),
                     "\n  IdentityFile ", dir_.path(), "/id_ed25519\n"));
  Target target;
  target.host = "myalias";
  target.config_file = config;
  target.known_hosts = dir_.Join("known_hosts");
  auto session = Connect(target);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->user(), LocalUser());
  auto result = session->Exec("echo via alias", seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "via alias\n");

  // What the Target says wins over the configuration.
  ClosedPort closed(sshd_->address());
  ASSERT_GT(closed.port(), 0);
  target.port = closed.port();
  EXPECT_EQ(Session::Connect(target).status().code(), StatusCode::kUnavailable);
  target.port = 0;
  target.user = "nobody-here";
  EXPECT_EQ(Session::Connect(target).status().code(),
            StatusCode::kPermissionDenied);
}

TEST_F(SessionTest, MissingConfigFileIsNamed) {
  Target target = sshd_->target();
  target.config_file = dir_.Join("no_such_config");
  auto session = Session::Connect(target);
  ASSERT_EQ(session.status().code(), StatusCode::kNotFound) << session.status();
  EXPECT_THAT(Message(session.status()), HasSubstr(target.config_file));
}

TEST_F(SessionTest, ProxyJumpThroughAnotherServer) {
  if (access("/usr/bin/ssh", X_OK) != 0) {
    GTEST_SKIP() << "ProxyJump runs the OpenSSH client, /usr/bin/ssh";
  }
  auto behind = Sshd::Start(dir_.path(), "b", "127.0.0.3");
  ASSERT_TRUE(behind.ok()) << behind.status();
  std::string config = dir_.Join("ssh_config");
  dtf::testing::WriteFile(
      config,
      StrCat("Host jump\n  HostName ", sshd_->address(), "\n  Port ",
             sshd_->port(), "\n  User ", LocalUser(), "\n  IdentityFile ",
             dir_.path(), "/id_ed25519\n", "Host behind\n  HostName ",
             (*behind)->address(), "\n  Port ", (*behind)->port(), "\n  User ",
             LocalUser(), "\n  IdentityFile ", dir_.path(),
             "/id_ed25519\n  ProxyJump jump\n"));
  const std::string accepted = "Accepted publickey";
  size_t jump_logins =
      Count(dtf::testing::ReadFile(sshd_->log_file()), accepted);
  Target target;
  target.host = "behind";
  target.config_file = config;
  target.known_hosts = dir_.Join("known_hosts");
  auto session = Connect(target);
  ASSERT_NE(session, nullptr);
  auto result = session->Exec("echo behind", seconds(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "behind\n");
  // The jump host saw one more login: the hop.
  EXPECT_EQ(Count(dtf::testing::ReadFile(sshd_->log_file()), accepted),
            jump_logins + 1);
  EXPECT_EQ(Count(dtf::testing::ReadFile((*behind)->log_file()), accepted), 1u);
}

TEST_F(SessionTest, KeepAliveNoticesALostConnection) {
  Target target = sshd_->target();
  target.keepalive_seconds = 1;
  auto session = Connect(target);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->KeepAlive().ok());
  // The server logs each keepalive it receives (sshd.sh: LogLevel DEBUG1).
  const std::string keepalive = "rtype keepalive@openssh.com";
  const size_t before =
      Count(dtf::testing::ReadFile(sshd_->log_file()), keepalive);
  // Idle for keepalive_seconds: the next call sends one.
  std::this_thread::sleep_for(milliseconds(1100));
  EXPECT_TRUE(session->KeepAlive().ok());
  ASSERT_TRUE(session->Exec("true", seconds(10)).ok());
  size_t after = before;
  for (auto deadline = std::chrono::steady_clock::now() + seconds(30);
       after == before && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(milliseconds(50));
    after = Count(dtf::testing::ReadFile(sshd_->log_file()), keepalive);
  }
  EXPECT_EQ(after, before + 1) << "the server saw no keepalive";

  ASSERT_TRUE(sshd_->Stop().ok());
  Status status = OkStatus();
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (status.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
    status = session->KeepAlive();
  }
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status;
}

}  // namespace
}  // namespace dtf::launch::ssh::testing
