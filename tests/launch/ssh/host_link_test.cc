// HostLink against a real sshd: a dropped connection comes back once the
// server does, and a server that stays down loses the host within the
// bound.
#include "lib/launch/ssh/host_link.h"

#include <gmock/gmock.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "lib/launch/ssh/remote_host.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch {
namespace {

using ssh::testing::SshdTest;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

class HostLinkTest : public SshdTest {
 protected:
  void SetUp() override {
    SshdTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::unique_ptr<ssh::Session> session = Connect();
    ASSERT_NE(session, nullptr);
    host_ = std::make_unique<RemoteHost>(std::move(session), dir_.path());
    file_ = dir_.path() + "/ready";
    std::ofstream(file_) << "127.0.0.2:7000";
  }

  // Reads the file until that fails (the server's end of the session is
  // gone); the error.
  Status ReadUntilItFails() {
    for (int i = 0; i < 100; ++i) {
      StatusOr<std::optional<std::string>> r = host_->ReadAt(file_, 0, 64);
      if (!r.ok()) return r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return OkStatus();
  }

  std::unique_ptr<RemoteHost> host_;
  std::string file_;
};

TEST_F(HostLinkTest, ADroppedConnectionIsReconnectedOnceTheServerIsBack) {
  ReconnectPolicy policy;
  policy.timeout = std::chrono::seconds(20);
  policy.first_delay = std::chrono::milliseconds(100);
  policy.max_delay = std::chrono::milliseconds(400);
  HostLink link(host_.get(), "127.0.0.2", policy);
  EXPECT_EQ(link.Tick(), HostLink::State::kUp);

  // The server and the process serving this session go away.
  ASSERT_TRUE(sshd_->Stop().ok());
  const Status error = ReadUntilItFails();
  ASSERT_FALSE(error.ok()) << "the session outlived its server";
  EXPECT_TRUE(ConnectionLost(*host_, error)) << error;
  ASSERT_TRUE(link.Dropped(error));
  EXPECT_EQ(link.state(), HostLink::State::kReconnecting);
  // Refused meanwhile: the link keeps trying.
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < until) {
    ASSERT_EQ(link.Tick(), HostLink::State::kReconnecting) << link.last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(link.attempts(), 2);
  EXPECT_THAT(Message(link.last_error()), HasSubstr("127.0.0.2"));

  ASSERT_TRUE(sshd_->Restart().ok());
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (link.Tick() != HostLink::State::kUp && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(link.state(), HostLink::State::kUp) << link.last_error();
  StatusOr<std::optional<std::string>> r = host_->ReadAt(file_, 0, 64);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->value_or(""), "127.0.0.2:7000");
}

TEST_F(HostLinkTest, AHostThatStaysDownIsLostWithinTheBound) {
  ReconnectPolicy policy;
  policy.timeout = std::chrono::seconds(2);
  policy.first_delay = std::chrono::milliseconds(100);
  policy.max_delay = std::chrono::milliseconds(400);
  HostLink link(host_.get(), "127.0.0.2", policy);
  ASSERT_TRUE(sshd_->Stop().ok());
  const Status error = ReadUntilItFails();
  ASSERT_FALSE(error.ok());
  const auto start = Clock::now();
  ASSERT_TRUE(link.Dropped(error));
  while (link.Tick() != HostLink::State::kLost &&
         Clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto took = Clock::now() - start;
  ASSERT_EQ(link.state(), HostLink::State::kLost);
  EXPECT_GE(took, std::chrono::seconds(2));
  EXPECT_LT(took, std::chrono::seconds(5));
  const Status lost = link.LostError();
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable);
  EXPECT_THAT(Message(lost), HasSubstr("host 127.0.0.2 is unreachable"));
  EXPECT_THAT(Message(lost), HasSubstr("within 2 s (ssh.reconnect_timeout)"));
  // The last error is the refused connection's, naming the server.
  EXPECT_THAT(Message(lost), HasSubstr(sshd_->target().Label()));
}

// An operation's own error (a file that cannot be read) is no drop.
TEST_F(HostLinkTest, AnOperationsOwnErrorIsNoDrop) {
  HostLink link(host_.get(), "127.0.0.2", ReconnectPolicy{});
  StatusOr<std::optional<std::string>> r =
      host_->ReadAt(dir_.path(), 0, 64);  // a directory
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(ConnectionLost(*host_, r.status())) << r.status();
  EXPECT_FALSE(link.Dropped(r.status()));
  EXPECT_TRUE(link.up());
}

}  // namespace
}  // namespace dtf::launch
