// The GoogleTest fixture the lib/launch/ssh tests share: a temporary
// directory and one server ("a" on 127.0.0.2) whose host key is known.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "lib/launch/ssh/session.h"
#include "tests/launch/ssh/sshd_fixture.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::ssh::testing {

class SshdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason = SshdUnavailableReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    StatusOr<std::unique_ptr<Sshd>> sshd =
        Sshd::Start(dir_.path(), "a", "127.0.0.2");
    ASSERT_TRUE(sshd.ok()) << sshd.status();
    sshd_ = *std::move(sshd);
  }

  std::unique_ptr<Session> Connect() { return Connect(sshd_->target()); }
  std::unique_ptr<Session> Connect(const Target& target) {
    StatusOr<std::unique_ptr<Session>> session = Session::Connect(target);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  dtf::testing::TempDir dir_{"dtf_ssh_test"};
  std::unique_ptr<Sshd> sshd_;
};

}  // namespace dtf::launch::ssh::testing
