// What a Kubernetes pod's keys init container copies (dtf task keys): the
// run's secret, the CA's certificate and the pod's own task's certificate
// and key, from a Secret volume as the kubelet writes it.
#include "lib/launch/k8s/task_keys.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::k8s {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A Secret volume as the kubelet writes it: the files in a timestamped
// directory, `..data` a link to it, each key a link to `..data/<key>`.
std::string SecretVolume(const dtf::testing::TempDir& dir,
                         const std::map<std::string, std::string>& files) {
  const fs::path root = fs::path(dir.path()) / "run";
  const fs::path stamp = root / "..2026_12_03_00_00_00.1";
  fs::create_directories(stamp);
  for (const auto& [name, data] : files) {
    EXPECT_TRUE(WriteFileAtomically((stamp / name).string(), data).ok());
    fs::create_symlink(fs::path("..data") / name, root / name);
  }
  fs::create_directory_symlink(stamp.filename(), root / "..data");
  return root.string();
}

std::map<std::string, std::string> RunSecret() {
  return {{"secret", "s3cr3t"},         {"ca.pem", "CA"},
          {"ps-0.pem", "ps0 cert"},     {"ps-0.key", "ps0 key"},
          {"worker-0.pem", "w0 cert"},  {"worker-0.key", "w0 key"},
          {"worker-1.pem", "w1 cert"},  {"worker-1.key", "w1 key"},
          {"s3-credentials", "s3 file"}};
}

std::vector<std::string> Listed(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(TaskKeys, APodGetsItsOwnKeysAndNoOtherTasks) {
  dtf::testing::TempDir dir;
  const std::string from = SecretVolume(dir, RunSecret());
  const std::string to = dir.Join("secret");
  StatusOr<std::vector<std::string>> copied =
      CopyTaskKeys(from, to, TaskName{Role::kWorker, 1});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_THAT(*copied, ElementsAre("secret", "ca.pem", "worker-1.pem",
                                   "worker-1.key", "s3-credentials"));
  EXPECT_THAT(Listed(to), ElementsAre("ca.pem", "s3-credentials", "secret",
                                      "worker-1.key", "worker-1.pem"));
  EXPECT_EQ(*ReadFileToString(to + "/worker-1.key"), "w1 key");
  EXPECT_EQ(*ReadFileToString(to + "/secret"), "s3cr3t");
  for (const std::string& name : Listed(to)) {
    struct stat st;
    ASSERT_EQ(::lstat((to + "/" + name).c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(st.st_mode & 0777, 0400u) << name;
  }
  // Run again (the init container started again in the same pod).
  ASSERT_TRUE(CopyTaskKeys(from, to, TaskName{Role::kWorker, 1}).ok());
}

TEST(TaskKeys, WithoutTlsOnlyTheSecretAndAMissingKeyIsNamed) {
  dtf::testing::TempDir dir;
  const std::string from = SecretVolume(dir, {{"secret", "s"}});
  StatusOr<std::vector<std::string>> copied =
      CopyTaskKeys(from, dir.Join("a"), TaskName{Role::kPs, 0});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_THAT(*copied, ElementsAre("secret"));

  dtf::testing::TempDir other;
  const std::string tls = SecretVolume(other, RunSecret());
  StatusOr<std::vector<std::string>> missing =
      CopyTaskKeys(tls, other.Join("b"), TaskName{Role::kWorker, 7});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(Message(missing.status())),
              HasSubstr("worker-7.pem: the run's Secret holds no worker-7.pem "
                        "for worker:7"));
}

TEST(TaskKeys, TheTaskFromThePodsIndex) {
  // An Indexed Job: parameter servers first.
  EXPECT_EQ(*TaskFromIndex("JOB_COMPLETION_INDEX", "1", 2, 3, Role::kWorker, 0),
            (TaskName{Role::kPs, 1}));
  EXPECT_EQ(*TaskFromIndex("JOB_COMPLETION_INDEX", "4", 2, 3, Role::kWorker, 0),
            (TaskName{Role::kWorker, 2}));
  // A TFJob's Worker replica 0 is dtf's worker 1.
  EXPECT_EQ(*TaskFromIndex("DTF_REPLICA_INDEX", "0", -1, 0, Role::kWorker, 1),
            (TaskName{Role::kWorker, 1}));
  for (const std::string bad : {"", "5", "-1", "x", "1x"}) {
    StatusOr<TaskName> t =
        TaskFromIndex("JOB_COMPLETION_INDEX", bad, 2, 3, Role::kWorker, 0);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(
        std::string(Message(t.status())),
        HasSubstr("JOB_COMPLETION_INDEX: expected an index from 0 to 4"));
  }
}

}  // namespace
}  // namespace dtf::launch::k8s
