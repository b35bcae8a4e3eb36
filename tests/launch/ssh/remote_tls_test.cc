// RemoteHost::PrepareRun shipping a run's TLS material to a host over a
// real sshd: the host gets the CA's certificate and its own tasks'
// certificates and keys, private to its user, and nothing else.
#include <gmock/gmock.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/ssh/remote_host.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch {
namespace {

using ssh::testing::SshdTest;
using ::testing::ElementsAre;

int ModeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777)
                                        : -1;
}

class RemoteTlsTest : public SshdTest {};

TEST_F(RemoteTlsTest, AHostGetsItsOwnTasksCertificatesOnly) {
  std::unique_ptr<ssh::Session> session = Connect();
  ASSERT_NE(session, nullptr);
  const std::string work = dir_.Join("work");
  RemoteHost host(std::move(session), work);

  Plan plan;
  plan.run_id = "20260101-120000-abcd";
  plan.backend = BackendKind::kSsh;
  plan.ps = 1;
  plan.workers = 2;
  plan.tls = true;
  const std::string run_dir = StrCat(work, "/runs/", plan.run_id);
  auto add = [&](const char* role, int index, const char* on) {
    TaskPlan t;
    t.role = *ParseRoleName(role);
    t.index = index;
    t.host = on;
    t.dir = StrCat(run_dir, "/", TaskDirName(t.role, index));
    plan.tasks.push_back(t);
  };
  add("ps", 0, "127.0.0.2");
  add("worker", 0, "127.0.0.2");
  add("worker", 1, "gpu-b");
  StatusOr<RunTls> tls = MakeRunTls(plan);
  ASSERT_TRUE(tls.ok()) << tls.status();

  const std::vector<const TaskPlan*> mine = {&plan.tasks[0], &plan.tasks[1]};
  const Status prepared = host.PrepareRun(plan, std::string(64, 'a'), mine,
                                          HostTlsFiles(*tls, mine));
  ASSERT_TRUE(prepared.ok()) << prepared;

  const std::string tls_dir = TlsDirOf(run_dir);
  EXPECT_EQ(ModeOf(tls_dir), 0700);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(tls_dir)) {
    names.push_back(e.path().filename().string());
    EXPECT_EQ(ModeOf(e.path().string()), 0600) << names.back();
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("ca.pem", "ps-0.key", "ps-0.pem",
                                 "worker-0.key", "worker-0.pem"));
  EXPECT_EQ(dtf::testing::ReadFile(tls_dir + "/ca.pem"), tls->ca.cert);
  EXPECT_EQ(dtf::testing::ReadFile(tls_dir + "/worker-0.key"),
            tls->certs.at("worker-0").key);
  EXPECT_EQ(ModeOf(StrCat(run_dir, "/", kSecretFile)), 0600);

  // Without TLS material no tls/ is made.
  Plan plain = plan;
  plain.run_id = "20260101-120000-ef01";
  plain.tls = false;
  const std::string plain_dir = StrCat(work, "/runs/", plain.run_id);
  for (TaskPlan& t : plain.tasks) {
    t.dir = StrCat(plain_dir, "/", TaskDirName(t.role, t.index));
  }
  ASSERT_TRUE(
      host.PrepareRun(plain, std::string(64, 'b'), {&plain.tasks[0]}).ok());
  EXPECT_FALSE(std::filesystem::exists(TlsDirOf(plain_dir)));
  EXPECT_TRUE(std::filesystem::exists(StrCat(plain_dir, "/ps-0")));
}

}  // namespace
}  // namespace dtf::launch
