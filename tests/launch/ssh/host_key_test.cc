// Host keys: unknown and changed keys refused with their fingerprints,
// accept_new_host_key, CheckHostKey and TrustHostKey.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>

#include "lib/base/strings.h"
#include "lib/launch/ssh/session.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch::ssh::testing {
namespace {

using ::testing::HasSubstr;

// The fingerprint `ssh-keygen -lf` shows for a public key file.
std::string KeygenFingerprint(const std::string& pub) {
  FILE* pipe = popen(StrCat("ssh-keygen -lf ", pub).c_str(), "r");
  char line[512] = {};
  if (pipe == nullptr || fgets(line, sizeof(line), pipe) == nullptr) return "";
  pclose(pipe);
  std::string text = line;  // "256 SHA256:... comment (ED25519)"
  size_t start = text.find(' ') + 1;
  return text.substr(start, text.find(' ', start) - start);
}

int Mode(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777)
                                      : -1;
}

class HostKeyTest : public SshdTest {
 protected:
  void SetUp() override {
    SshdTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    target_ = sshd_->target();
    target_.known_hosts = dir_.Join("sub/dir/known_hosts");
    name_ = StrCat("[", sshd_->address(), "]:", sshd_->port());
  }
  Target target_;
  std::string name_;
};

TEST_F(HostKeyTest, UnknownKeyIsRefusedWithItsFingerprint) {
  std::string fingerprint = KeygenFingerprint(sshd_->host_public_key());
  ASSERT_THAT(fingerprint, ::testing::StartsWith("SHA256:"));
  target_.trust_command = "dtf hosts trust a --profile test";
  auto session = Session::Connect(target_);
  ASSERT_EQ(session.status().code(), StatusCode::kFailedPrecondition)
      << session.status();
  std::string message(Message(session.status()));
  EXPECT_THAT(message, HasSubstr(StrCat("ED25519 ", fingerprint)));
  EXPECT_THAT(message, HasSubstr(target_.known_hosts));
  EXPECT_THAT(message, HasSubstr(name_));
  EXPECT_THAT(message, HasSubstr("dtf hosts trust a --profile test"));
  EXPECT_THAT(message, HasSubstr(StrCat("ssh ", target_.Label(), ": ")));

  auto check = CheckHostKey(target_);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->state, "unknown");
  EXPECT_EQ(check->key.fingerprint, fingerprint);
  EXPECT_EQ(check->key.type, "ssh-ed25519");
  EXPECT_EQ(check->known_hosts, target_.known_hosts);
}

TEST_F(HostKeyTest, AcceptNewRecordsTheKey) {
  target_.accept_new_host_key = true;
  auto session = Session::Connect(target_);
  ASSERT_TRUE(session.ok()) << session.status();
  std::string known = dtf::testing::ReadFile(target_.known_hosts);
  EXPECT_THAT(known, ::testing::StartsWith(name_ + " ssh-ed25519 "));
  EXPECT_EQ(Mode(target_.known_hosts), 0600);
  EXPECT_EQ(Mode(dir_.Join("sub/dir")), 0700);

  target_.accept_new_host_key = false;
  session = Session::Connect(target_);
  ASSERT_TRUE(session.ok()) << session.status();
  auto check = CheckHostKey(target_);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->state, "ok");
}

TEST_F(HostKeyTest, TrustHostKeyThenConnect) {
  auto key = TrustHostKey(target_, /*replace_changed=*/false);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->fingerprint, KeygenFingerprint(sshd_->host_public_key()));
  EXPECT_EQ(Mode(target_.known_hosts), 0600);
  auto session = Session::Connect(target_);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(session->get()->host_key().fingerprint, key->fingerprint);
  // Trusting a known key again writes nothing.
  ASSERT_TRUE(TrustHostKey(target_, false).ok());
  std::string known = dtf::testing::ReadFile(target_.known_hosts);
  EXPECT_EQ(std::count(known.begin(), known.end(), '\n'), 1);
}

TEST_F(HostKeyTest, ChangedKeyIsRefusedUntilReplaced) {
  target_.known_hosts = dir_.Join("known_hosts");  // has the first key
  std::string old_fingerprint = KeygenFingerprint(sshd_->host_public_key());
  ASSERT_TRUE(Session::Connect(target_).ok());
  ASSERT_TRUE(sshd_->NewHostKey().ok());
  ASSERT_TRUE(sshd_->Restart().ok());
  std::string new_fingerprint = KeygenFingerprint(sshd_->host_public_key());
  ASSERT_NE(old_fingerprint, new_fingerprint);

  target_.accept_new_host_key = true;  // never covers a changed key
  auto session = Session::Connect(target_);
  ASSERT_EQ(session.status().code(), StatusCode::kFailedPrecondition)
      << session.status();
  std::string message(Message(session.status()));
  EXPECT_THAT(message, HasSubstr("HOST KEY CHANGED"));
  EXPECT_THAT(message, HasSubstr(StrCat("offers ED25519 ", new_fingerprint)));
  EXPECT_THAT(message, HasSubstr(StrCat(target_.known_hosts, ":1 has ED25519 ",
                                        old_fingerprint)));

  auto check = CheckHostKey(target_);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->state, "changed");
  EXPECT_EQ(check->key.fingerprint, new_fingerprint);

  auto trusted = TrustHostKey(target_, /*replace_changed=*/false);
  EXPECT_EQ(trusted.status().code(), StatusCode::kFailedPrecondition);
  trusted = TrustHostKey(target_, /*replace_changed=*/true);
  ASSERT_TRUE(trusted.ok()) << trusted.status();
  EXPECT_EQ(trusted->fingerprint, new_fingerprint);
  std::string known = dtf::testing::ReadFile(target_.known_hosts);
  EXPECT_EQ(std::count(known.begin(), known.end(), '\n'), 1) << known;
  ASSERT_TRUE(Session::Connect(target_).ok());
}

}  // namespace
}  // namespace dtf::launch::ssh::testing
