// What dtf predict --profile ships to an SSH profile's hosts and where its
// tasks read and write there (lib/launch/ssh/ssh_batch.h).
#include "lib/launch/ssh/ssh_batch.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/batch/supervised_batch.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

class PredictRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"model/model.json", "model/weights/w.bin",
                             "in/b.tfrecord", "in2/a.tfrecord"}) {
      fs::create_directories(fs::path(dir_.Join(name)).parent_path());
      testing::WriteFile(dir_.Join(name), name);
    }
  }
  testing::TempDir dir_{"dtf_predict_remote_test"};
};

TEST_F(PredictRemoteTest, WithDataShipsTheModelAndTheInputsInOrder) {
  // Sorted as PredictInputFiles sorts them: by path.
  const std::vector<std::string> files = {dir_.Join("in/b.tfrecord"),
                                          dir_.Join("in2/a.tfrecord")};
  StatusOr<launch::BatchFiles> b =
      ShippedBatchFiles(dir_.Join("model"), files, /*with_data=*/true);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->entry, "model");
  EXPECT_THAT(b->on_hosts, IsEmpty());
  EXPECT_THAT(
      b->shipped,
      ElementsAre(Pair("model/model.json", dir_.Join("model/model.json")),
                  Pair("model/weights/w.bin", dir_.Join("model/weights/w.bin")),
                  Pair("inputs/000000-b.tfrecord", files[0]),
                  Pair("inputs/000001-a.tfrecord", files[1])));
  // On the host the inputs sort as they do here, whatever their names.
  const std::vector<std::string> there =
      RemoteInputs("/w/jobs/0123/model", files, true);
  EXPECT_THAT(there, ElementsAre("/w/jobs/0123/inputs/000000-b.tfrecord",
                                 "/w/jobs/0123/inputs/000001-a.tfrecord"));
  EXPECT_TRUE(std::is_sorted(there.begin(), there.end()));
}

TEST_F(PredictRemoteTest, WithoutDataTheInputsAreFoundOnTheHosts) {
  const std::vector<std::string> files = {dir_.Join("in/b.tfrecord")};
  StatusOr<launch::BatchFiles> b =
      ShippedBatchFiles(dir_.Join("model"), files, /*with_data=*/false);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->on_hosts, ElementsAre(files[0]));
  EXPECT_EQ(b->shipped.size(), 2u);
  EXPECT_EQ(RemoteInputs("/w/jobs/0123/model", files, false), files);
}

TEST_F(PredictRemoteTest, MissingModelIsAnErrorNamingIt) {
  StatusOr<launch::BatchFiles> b =
      ShippedBatchFiles(dir_.Join("nope"), {}, true);
  EXPECT_FALSE(b.ok());
  EXPECT_THAT(Message(b.status()), ::testing::HasSubstr(dir_.Join("nope")));
}

TEST_F(PredictRemoteTest, ShardsGoInTheTaskDirectory) {
  launch::TaskPlan task;
  task.index = 1;
  task.dir = "/w/runs/r1/worker-1";
  EXPECT_EQ(TaskDirShardPath(task, "/here/scores.csv", 3),
            "/w/runs/r1/worker-1/scores.csv.shard-1-of-3");
}

}  // namespace
}  // namespace dtf::launch
