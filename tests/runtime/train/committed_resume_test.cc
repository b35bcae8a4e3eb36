// Where a worker restarted alone reads on (CommittedResumePosition): the
// position the parameter servers committed for it where that is past the
// checkpoint's, compared whole.
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/worker_loop.h"

namespace dtf::runtime {
namespace {

// An update whose parameter servers committed `committed` for worker 1.
class CommittedUpdate : public Update {
 public:
  std::optional<InputPosition> committed;
  bool fails = false;

  bool commits_positions() const override { return true; }
  StatusOr<std::vector<std::optional<InputPosition>>> FetchCommittedPositions()
      override {
    if (fails) return UnavailableError("ps:0 is gone");
    return std::vector<std::optional<InputPosition>>{std::nullopt, committed};
  }
  int64_t global_step() const override { return 0; }
  Status Pull(const PreparedBatch&) override { return OkStatus(); }
  Status Apply(const PreparedBatch&, float, std::vector<Gradient>*,
               const PreparedBatch&) override {
    return OkStatus();
  }
  Status WithDeviceModel(const std::function<Status(Model&)>&) override {
    return OkStatus();
  }
  Status WithHostModel(bool, const HostUse&) override { return OkStatus(); }
};

class CommittedResumeTest : public ::testing::Test {
 protected:
  InputPosition Resume(const InputPosition& recorded) {
    WorkerOptions options;
    options.index = 1;
    TrainHooks hooks;
    hooks.on_note = [this](std::string_view n) { notes_.emplace_back(n); };
    return CommittedResumePosition(options, hooks, update_, recorded);
  }
  CommittedUpdate update_;
  std::vector<std::string> notes_;
};

// Shuffling drains its buffer at an epoch's end: every record of the
// epoch read (epoch_record 16280 of 16,280), 12,240 yielded at the
// checkpoint, 15,312 when the worker was lost. The committed position is
// later by its yielded records alone, and taken: resuming at the
// checkpoint's would train the 96 batches between again.
TEST_F(CommittedResumeTest, APositionLaterByItsYieldedRecordsAloneIsTaken) {
  const InputPosition recorded{2, 2, 0, 16280, 12240};
  update_.committed = InputPosition{2, 2, 0, 16280, 15312};
  EXPECT_EQ(Resume(recorded), *update_.committed);
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_NE(notes_[0].find("instead"), std::string::npos) << notes_[0];
}

TEST_F(CommittedResumeTest, ALaterEpochOrRecordIsTakenAnEarlierOneNot) {
  const InputPosition recorded{2, 1, 300, 9000, 8000};
  update_.committed = InputPosition{3, 0, 64, 64, 32};
  EXPECT_EQ(Resume(recorded), *update_.committed);
  update_.committed = InputPosition{2, 1, 400, 9100, 8100};
  EXPECT_EQ(Resume(recorded), *update_.committed);
  update_.committed = InputPosition{2, 1, 200, 8900, 7900};
  EXPECT_EQ(Resume(recorded), recorded);
  update_.committed = recorded;
  EXPECT_EQ(Resume(recorded), recorded);
}

TEST_F(CommittedResumeTest, NoneCommittedOrNoAnswerKeepsTheCheckpoints) {
  const InputPosition recorded{1, 0, 10, 10, 0};
  update_.committed.reset();
  EXPECT_EQ(Resume(recorded), recorded);
  update_.fails = true;
  update_.committed = InputPosition{2, 0, 0, 0, 0};
  EXPECT_EQ(Resume(recorded), recorded);
  ASSERT_FALSE(notes_.empty());
  EXPECT_NE(notes_.back().find("ps:0 is gone"), std::string::npos);
}

}  // namespace
}  // namespace dtf::runtime
