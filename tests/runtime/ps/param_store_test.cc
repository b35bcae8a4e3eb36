// ParamStore without any transport: pushes as plain piece views, gathers
// into a sink, in async and sync mode.
#include "lib/runtime/ps/param_store.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr float kLearningRate = 0.5f;

// A 200000-row table of 4 columns (3.2 MB: more than one piece on either
// of two parameter servers) and a small MLP.
std::string JobText(std::string_view mode, std::string_view optimizer) {
  return StrCat(R"(
[schema]
label = "label"
columns = ["label:int", "key:str"]

[[features.hashed]]
name = "key"
buckets = 200000
embedding = 4
wide = false

[model]
type = "mlp"
hidden = [3]

[train]
mode = ")",
                mode, R"("
seed = 7

[train.optimizer]
type = ")",
                optimizer, R"("
learning_rate = 0.5
)");
}

// A gradient piece with its own storage.
struct Grad {
  std::string name;
  std::string slot;
  int64_t row_offset = 0;
  int64_t rows = 0;
  std::vector<int64_t> ids;
  std::vector<float> values;

  PieceView View() const {
    PieceView v;
    v.name = name;
    v.slot = slot;
    v.row_offset = row_offset;
    v.rows = rows;
    v.ids = ids;
    v.values = std::as_bytes(std::span<const float>(values));
    return v;
  }
};

std::vector<PieceView> Views(const std::vector<Grad>& grads) {
  std::vector<PieceView> views;
  for (const Grad& g : grads) views.push_back(g.View());
  return views;
}

// Every piece a gather gave, with its values copied out.
struct Got {
  std::string name, slot;
  int64_t row_offset = 0, rows = 0, cols = 0;
  std::vector<int64_t> ids;
  std::vector<float> values;
};

class CollectingSink final : public PieceSink {
 public:
  std::byte* Piece(const PieceInfo& info) override {
    if (refuse_after_ >= 0 && int(got.size()) >= refuse_after_) return nullptr;
    Got& g = got.emplace_back();
    g.name = std::string(info.name);
    g.slot = std::string(info.slot);
    g.row_offset = info.row_offset;
    g.rows = info.rows;
    g.cols = info.cols;
    g.ids.assign(info.ids.begin(), info.ids.end());
    // Unaligned on purpose: the store may not assume float alignment.
    buffers_.emplace_back(size_t(info.rows * info.cols) * 4 + 1);
    return buffers_.back().data() + 1;
  }
  // Copies the bytes handed out into each piece's values.
  void Finish() {
    for (size_t i = 0; i < got.size(); ++i) {
      got[i].values.resize(buffers_[i].size() / 4);
      std::memcpy(got[i].values.data(), buffers_[i].data() + 1,
                  got[i].values.size() * 4);
    }
  }
  void RefuseAfter(int n) { refuse_after_ = n; }

  std::vector<Got> got;

 private:
  std::vector<std::vector<std::byte>> buffers_;
  int refuse_after_ = -1;
};

class ParamStoreTest : public ::testing::Test {
 protected:
  // `stores` parameter servers for `workers` workers.
  void Start(std::string_view mode, int workers, int stores = 1,
             std::string_view optimizer = "sgd",
             const std::string& extra_train = "") {
    const std::string path = dir_.Join("job.toml");
    dtf::testing::WriteFile(path, JobText(mode, optimizer));
    StatusOr<JobFile> job = LoadJobFile(
        path, extra_train.empty() ? std::vector<std::string>{}
                                  : std::vector<std::string>{extra_train});
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    StatusOr<std::vector<VariableSpec>> layout =
        Model::Layout(*layer, *job_.model);
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = *std::move(layout);
    stores_.clear();
    for (int p = 0; p < stores; ++p) {
      StoreOptions o;
      o.index = p;
      o.num_ps = stores;
      o.num_workers = workers;
      o.started_workers = started_workers_;
      StatusOr<std::unique_ptr<ParamStore>> store = ParamStore::Create(job_, o);
      ASSERT_TRUE(store.ok()) << store.status();
      stores_.push_back(*std::move(store));
    }
    for (const VariableSpec& v : layout_) {
      if (!v.trainable) continue;
      if (v.sparse) {
        table_ = &v;
      } else if (v.shape.size() == 2) {
        kernel_ = &v;
      }
    }
    ASSERT_NE(table_, nullptr);
    ASSERT_NE(kernel_, nullptr);
  }

  // Every value of the dense variable `v` on store 0 (its every row there).
  std::vector<float> Dense(const VariableSpec& v, int64_t* step = nullptr) {
    GatherRequest request;
    request.dense.push_back(v.name);
    CollectingSink sink;
    StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    if (step != nullptr) *step = r->global_step;
    sink.Finish();
    std::vector<float> values;
    for (const Got& g : sink.got) {
      values.insert(values.end(), g.values.begin(), g.values.end());
    }
    return values;
  }

  // Rows `ids` of the table on store 0.
  std::vector<float> Rows(const std::vector<int64_t>& ids) {
    GatherRequest request;
    request.sparse.push_back({table_->name, ids, false});
    CollectingSink sink;
    StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
    EXPECT_TRUE(r.ok()) << r.status();
    sink.Finish();
    std::vector<float> values;
    for (const Got& g : sink.got) {
      values.insert(values.end(), g.values.begin(), g.values.end());
    }
    return values;
  }

  // A gradient of `g` for every element of the dense variable `v`.
  Grad DenseGrad(const VariableSpec& v, float g) {
    Grad grad;
    grad.name = v.name;
    grad.rows = v.shape[0];
    grad.values.assign(size_t(grad.rows * PieceCols(v.shape)), g);
    return grad;
  }
  Grad RowsGrad(const std::vector<int64_t>& ids, float g) {
    Grad grad;
    grad.name = table_->name;
    grad.rows = int64_t(ids.size());
    grad.ids = ids;
    grad.values.assign(ids.size() * size_t(PieceCols(table_->shape)), g);
    return grad;
  }

  // The input positions the first store has committed (a checkpoint's
  // pull of the slots).
  WorkerPositions Committed() {
    GatherRequest request;
    request.slots = true;
    CollectingSink sink;
    StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->positions : WorkerPositions{};
  }

  StatusOr<PushResult> Push(int worker, int64_t step,
                            const std::vector<Grad>& grads, int store = 0) {
    const std::vector<PieceView> views = Views(grads);
    PushHeader header;
    header.worker = worker;
    header.step = step;
    return stores_[size_t(store)]->Push(header, views);
  }

  // StoreOptions::started_workers of the stores Start makes.
  int started_workers_ = 0;
  dtf::testing::TempDir dir_;
  JobFile job_;
  std::vector<VariableSpec> layout_;
  const VariableSpec* table_ = nullptr;
  const VariableSpec* kernel_ = nullptr;
  std::vector<std::unique_ptr<ParamStore>> stores_;
};

void ExpectShifted(const std::vector<float>& before,
                   const std::vector<float>& after, float shift) {
  ASSERT_EQ(before.size(), after.size());
  ASSERT_FALSE(before.empty());
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_FLOAT_EQ(after[i], before[i] + shift) << "[" << i << "]";
  }
}

TEST_F(ParamStoreTest, AsyncAppliesEachPushOnArrival) {
  Start("async", 2);
  const std::vector<float> kernel = Dense(*kernel_);
  const std::vector<float> rows = Rows({3, 199999});
  StatusOr<PushResult> r =
      Push(1, 0, {DenseGrad(*kernel_, 1.0f), RowsGrad({3, 199999}, 2.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 1);
  ExpectShifted(kernel, Dense(*kernel_), -kLearningRate);
  ExpectShifted(rows, Rows({3, 199999}), -2 * kLearningRate);
  // The other worker's push is applied on its own, at once.
  r = Push(0, 0, {DenseGrad(*kernel_, 1.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->global_step, 2);
  ExpectShifted(kernel, Dense(*kernel_), -2 * kLearningRate);
}

TEST_F(ParamStoreTest, SyncSumsTheWorkersPushesAndAppliesTheirAverage) {
  Start("sync", 2);
  const std::vector<float> kernel = Dense(*kernel_);
  const std::vector<float> rows = Rows({0, 2, 5});
  // Worker 0: 1 for the kernel and rows 0 and 2; worker 1: 3 for the kernel
  // and row 2, twice in one push.
  StatusOr<PushResult> r =
      Push(0, 0, {DenseGrad(*kernel_, 1.0f), RowsGrad({0, 2}, 1.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 0);
  EXPECT_EQ(Dense(*kernel_), kernel) << "applied before every worker pushed";
  r = Push(
      1, 0,
      {DenseGrad(*kernel_, 3.0f), RowsGrad({2}, 1.0f), RowsGrad({2}, 2.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 1);
  ExpectShifted(kernel, Dense(*kernel_), -kLearningRate * (1 + 3) / 2);
  const std::vector<float> after = Rows({0, 2, 5});
  const size_t cols = size_t(PieceCols(table_->shape));
  for (size_t c = 0; c < cols; ++c) {
    EXPECT_FLOAT_EQ(after[c], rows[c] - kLearningRate * 1 / 2);
    EXPECT_FLOAT_EQ(after[cols + c], rows[cols + c] - kLearningRate * 4 / 2);
    EXPECT_FLOAT_EQ(after[2 * cols + c], rows[2 * cols + c]);
  }
}

TEST_F(ParamStoreTest, SyncDropsASecondPushOfAWorkerAndPushesOfAnAppliedStep) {
  Start("sync", 2);
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  StatusOr<PushResult> again = Push(0, 0, {DenseGrad(*kernel_, 100.0f)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->applied);
  const std::vector<float> kernel = Dense(*kernel_);
  ASSERT_TRUE(Push(1, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  ExpectShifted(kernel, Dense(*kernel_), -kLearningRate);
  StatusOr<PushResult> late = Push(1, 0, {DenseGrad(*kernel_, 1.0f)});
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->applied);
  EXPECT_EQ(late->global_step, 1);
}

// Each push's input position is committed with the gradients: in sync
// mode once the step it was summed into is applied (not while it waits for
// the step's other pushes), at once when dropped as stale; in async mode
// at once. A pull with the slots (a checkpoint's) answers with them, read
// with the variables; a step's pull does not.
TEST_F(ParamStoreTest, CommitsEachPushsInputPositionWithItsStep) {
  const auto at = [](int64_t record) {
    return InputPosition{0, 0, record, record};
  };
  for (const std::string_view mode : {"sync", "async"}) {
    SCOPED_TRACE(mode);
    Start(mode, 2);
    const auto push = [&](int worker, int64_t step, int64_t record) {
      const std::vector<Grad> grads = {DenseGrad(*kernel_, 1.0f)};
      const std::vector<PieceView> views = Views(grads);
      PushHeader header;
      header.worker = worker;
      header.step = step;
      header.position = at(record);
      StatusOr<PushResult> r = stores_[0]->Push(header, views);
      EXPECT_TRUE(r.ok()) << r.status();
    };
    const auto committed = [&](bool slots) {
      GatherRequest request;
      request.dense.push_back(kernel_->name);
      request.slots = slots;
      CollectingSink sink;
      StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? r->positions : WorkerPositions{};
    };
    EXPECT_EQ(committed(true), WorkerPositions(2));
    push(0, 0, 32);
    const bool sync = mode == "sync";
    EXPECT_EQ(committed(true),
              (sync ? WorkerPositions(2) : WorkerPositions{at(32), {}}));
    push(1, 0, 32);
    EXPECT_EQ(committed(true), (WorkerPositions{at(32), at(32)}));
    push(0, sync ? 1 : 2, 64);
    EXPECT_EQ(committed(true),
              (WorkerPositions{sync ? at(32) : at(64), at(32)}));
    if (sync) {
      // Worker 1's late push for step 0, dropped: its batch is done with.
      push(1, 0, 64);
      EXPECT_EQ(committed(true), (WorkerPositions{at(32), at(64)}));
    }
    EXPECT_TRUE(committed(false).empty());
  }
}

// A push that comes late with an earlier position of its shard (its
// worker stopped while the chief handed the shard on, and another worker
// read it on) leaves the later position committed, applied or dropped:
// a checkpoint or a hand-on taken then starts no earlier than what was
// read.
TEST_F(ParamStoreTest, ALatePushDoesNotTakeAShardsPositionBack) {
  for (const std::string_view mode : {"sync", "async"}) {
    SCOPED_TRACE(mode);
    Start(mode, 3);
    const std::vector<Grad> grads = {DenseGrad(*kernel_, 1.0f)};
    const std::vector<PieceView> views = Views(grads);
    stores_[0]->WorkerDone(0);
    stores_[0]->WorkerDone(2);  // taken for dead: worker 1 reads shard 2
    const InputPosition read_on{3, 0, 40, 40};
    PushHeader header;
    header.worker = 1;
    header.shard = 2;
    header.position = read_on;
    ASSERT_TRUE(stores_[0]->Push(header, views).ok());
    EXPECT_EQ(Committed(), (WorkerPositions{{}, {}, read_on}));
    // Worker 2 back: its push of the batch it read before it stopped.
    header.worker = 2;
    header.shard = -1;
    header.step = 0;
    header.position = InputPosition{2, 0, 96, 96};
    ASSERT_TRUE(stores_[0]->Push(header, views).ok());
    EXPECT_EQ(Committed(), (WorkerPositions{{}, {}, read_on}));
    // A later one moves it on (dropped as stale in sync mode too).
    const InputPosition next_epoch{4, 0, 8, 8};
    header.position = next_epoch;
    ASSERT_TRUE(stores_[0]->Push(header, views).ok());
    EXPECT_EQ(Committed(), (WorkerPositions{{}, {}, next_epoch}));
  }
}

// A push of a batch of another worker's input shard (handed on to the
// pusher: docs/launch.md, *Elastic workers*) commits its position for
// that shard, in sync mode with its step; a shard the run does not have
// is refused. A worker that had finished its input counts in the sync
// steps again once it pushes.
TEST_F(ParamStoreTest, APushCommitsItsPositionForTheShardItCameFrom) {
  for (const std::string_view mode : {"sync", "async"}) {
    SCOPED_TRACE(mode);
    Start(mode, 3);
    const std::vector<Grad> grads = {DenseGrad(*kernel_, 1.0f)};
    const std::vector<PieceView> views = Views(grads);
    const InputPosition at{2, 0, 40, 40};
    stores_[0]->WorkerDone(2);  // worker 2 lost: no sync step waits for it
    PushHeader header;
    header.worker = 1;
    header.position = at;
    header.shard = 2;
    ASSERT_TRUE(stores_[0]->Push(header, views).ok());
    header.worker = 0;
    header.shard = -1;
    header.position = InputPosition{0, 0, 8, 8};
    ASSERT_TRUE(stores_[0]->Push(header, views).ok());
    EXPECT_EQ(Committed(),
              (WorkerPositions{InputPosition{0, 0, 8, 8}, {}, at}));
    header.shard = 3;
    StatusOr<PushResult> bad = stores_[0]->Push(header, views);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(Message(bad.status())),
                HasSubstr("no input shard 3 (the run has 3)"));
  }
  // Sync: worker 1 finished its input; it pushes again (it took a shard),
  // and the steps after wait for it as for worker 0.
  Start("sync", 2);
  const std::vector<Grad> grads = {DenseGrad(*kernel_, 1.0f)};
  stores_[0]->WorkerDone(1);
  ASSERT_TRUE(Push(1, 0, grads).ok());
  StatusOr<PushResult> r = Push(0, 0, grads);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->global_step, 1);
  r = Push(0, 1, grads);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->global_step, 1) << "step 1 waits for worker 1";
}

// After Shutdown the store changes no more: a worker that leaves then
// does not complete the step the others' pushes wait in, so that the
// chief's last checkpoint holds the variables and positions as they were.
TEST_F(ParamStoreTest, NoStepIsAppliedAfterShutdown) {
  Start("sync", 2);
  const std::vector<float> kernel = Dense(*kernel_);
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  stores_[0]->Shutdown("the run is over");
  stores_[0]->WorkerDone(1);
  stores_[0]->Tick();
  EXPECT_EQ(stores_[0]->global_step(), 0);
  EXPECT_EQ(Dense(*kernel_), kernel);
}

TEST_F(ParamStoreTest, AsyncDropsGradientsStalerThanMaxStaleness) {
  Start("async", 1, 1, "sgd", "train.max_staleness=1");
  for (int k = 0; k < 3; ++k) {
    StatusOr<PushResult> r = Push(0, 0, {DenseGrad(*kernel_, 1.0f)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->applied, k < 2) << "push " << k;
    EXPECT_EQ(r->global_step, std::min(k + 1, 2));
  }
  // A step from the far past or future does not overflow the staleness.
  for (const int64_t step : {std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()}) {
    StatusOr<PushResult> r = Push(0, step, {DenseGrad(*kernel_, 1.0f)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->applied, step > 0);
  }
}

// A worker that never pushes is waited for until it counts as dead
// (heartbeat_timeout); one that finished is not waited for at all.
TEST_F(ParamStoreTest, SyncStepsDoNotWaitForDeadOrFinishedWorkers) {
  // Worker 1's silence counts from the store's creation, inside Start.
  const auto started = std::chrono::steady_clock::now();
  Start("sync", 3, 1, "sgd", "train.heartbeat_timeout=1");
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  stores_[0]->WorkerDone(2);
  stores_[0]->Tick();
  EXPECT_EQ(stores_[0]->global_step(), 0) << "worker 1 is alive yet";
  // Worker 0 keeps asking for the step; worker 1 stays silent.
  GatherRequest request;
  request.dense.push_back(kernel_->name);
  request.worker = 0;
  request.min_step = 1;
  CollectingSink sink;
  StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->global_step, 1);
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 1s);
  EXPECT_LT(waited, 10s);

  // Worker 1 finishing applies a pending step at once.
  Start("sync", 2);
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  EXPECT_EQ(stores_[0]->global_step(), 0);
  stores_[0]->WorkerDone(1);
  EXPECT_EQ(stores_[0]->global_step(), 1);
}

// Worker slots reserved at launch (max_workers) hold no sync step until
// they push; a worker started later (dtf scale) then counts in each step.
TEST_F(ParamStoreTest, AReservedWorkerSlotCountsOnceItPushes) {
  started_workers_ = 2;
  Start("sync", 3);
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  StatusOr<PushResult> r = Push(1, 0, {DenseGrad(*kernel_, 3.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied) << "worker 2 is a reserved slot, not waited for";
  EXPECT_EQ(r->global_step, 1);
  // Worker 2 starts and pushes: the next step waits for all three.
  ASSERT_TRUE(Push(2, 1, {DenseGrad(*kernel_, 1.0f)}).ok());
  ASSERT_TRUE(Push(0, 1, {DenseGrad(*kernel_, 1.0f)}).ok());
  EXPECT_EQ(stores_[0]->global_step(), 1);
  r = Push(1, 1, {DenseGrad(*kernel_, 1.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 2);
  ASSERT_TRUE(Push(0, 2, {DenseGrad(*kernel_, 1.0f)}).ok());
  ASSERT_TRUE(Push(1, 2, {DenseGrad(*kernel_, 1.0f)}).ok());
  EXPECT_EQ(stores_[0]->global_step(), 2) << "worker 2 is waited for now";
}

// A worker that finishes with its last push waiting in a step (its last
// batch pulls nothing, so it leaves at once) does not take the step away
// from the live workers: the step still waits for their pushes, and none
// of them is dropped as stale. Once it is applied, the finished worker is
// waited for no more.
TEST_F(ParamStoreTest, AFinishedWorkersLastPushStillWaitsForTheOthers) {
  Start("sync", 2);
  ASSERT_TRUE(Push(1, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  stores_[0]->WorkerDone(1);
  stores_[0]->Tick();
  EXPECT_EQ(stores_[0]->global_step(), 0) << "worker 0 is alive yet";
  StatusOr<PushResult> r = Push(0, 0, {DenseGrad(*kernel_, 3.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 1);
  r = Push(0, 1, {DenseGrad(*kernel_, 1.0f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 2);
}

// The pushed pieces are checked, in checked arithmetic, before anything
// changes. A piece claiming about 2^62 rows from row offset about 2^62 once
// passed both checks (rows x cols x 4 and first + rows wrapped around) and
// was added outside the gradient buffer.
TEST_F(ParamStoreTest, AnOverflowingPieceIsRefused) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1);
    Grad piece;
    piece.name = kernel_->name;
    // rows x cols x 4 wraps to 0 bytes with cols a power of two.
    piece.rows = int64_t{1} << 62;
    piece.row_offset = (int64_t{1} << 62) + 1;
    StatusOr<PushResult> r = Push(0, 0, {piece});
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_NE(Message(r.status()).find(kernel_->name), std::string::npos)
        << r.status();
    // Rows in range but more of them than the values hold.
    piece.rows = 2;
    piece.row_offset = 0;
    piece.values.assign(size_t(PieceCols(kernel_->shape)), 1.0f);
    EXPECT_EQ(Push(0, 0, {piece}).status().code(),
              absl::StatusCode::kInvalidArgument);
    piece.rows = -1;
    EXPECT_EQ(Push(0, 0, {piece}).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(stores_[0]->global_step(), 0);
  }
}

// A piece of a sparse variable without its row ids once passed the checks
// (rows x cols x 4 bytes) and was read into a buffer sized by its ids.
TEST_F(ParamStoreTest, ASparsePieceWithoutIdsIsRefused) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1);
    Grad piece = RowsGrad({1, 2}, 1.0f);
    piece.ids.clear();
    StatusOr<PushResult> r = Push(0, 0, {piece});
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_NE(Message(r.status()).find(table_->name), std::string::npos)
        << r.status();
    // And a dense piece with ids.
    Grad dense = DenseGrad(*kernel_, 1.0f);
    dense.ids.assign(size_t(dense.rows), 0);
    EXPECT_EQ(Push(0, 0, {dense}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// A push with good pieces and one bad one changes nothing, in either mode:
// sync pushes are checked on arrival, before they join the step's sums.
TEST_F(ParamStoreTest, APushWithABadPieceChangesNothing) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1, 2);
    const std::vector<float> kernel = Dense(*kernel_);
    const std::vector<float> rows = Rows({0, 2});
    Grad shifted = DenseGrad(*kernel_, 1.0f);
    auto [begin, end] = Partition{2}.DenseRange(kernel_->shape[0], 0);
    shifted.rows = end - begin;
    shifted.values.resize(size_t(shifted.rows * PieceCols(kernel_->shape)));
    shifted.row_offset = begin + 1;  // its last row lies on ps:1
    std::vector<std::vector<Grad>> bad_pushes = {
        {RowsGrad({0, 2}, 1.0f), shifted},
        {RowsGrad({0, 2}, 1.0f), RowsGrad({4, 1}, 1.0f)},  // 1 is ps:1's
        {RowsGrad({0, 2}, 1.0f), RowsGrad({int64_t{1} << 40}, 1.0f)},
        {RowsGrad({0, 2}, 1.0f), RowsGrad({-2}, 1.0f)},
        {RowsGrad({0, 2}, 1.0f), DenseGrad(*kernel_, 1.0f)},  // all rows
    };
    Grad no_such = RowsGrad({0}, 1.0f);
    no_such.name = "no/such/variable";
    bad_pushes.push_back({RowsGrad({0, 2}, 1.0f), no_such});
    Grad slot = RowsGrad({0}, 1.0f);
    slot.slot = "accumulator";
    bad_pushes.push_back({RowsGrad({0, 2}, 1.0f), slot});
    for (size_t i = 0; i < bad_pushes.size(); ++i) {
      StatusOr<PushResult> r = Push(0, 0, bad_pushes[i]);
      ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
          << "push " << i << ": " << r.status();
      EXPECT_NE(Message(r.status()).find("ps:0"), std::string::npos)
          << r.status();
    }
    EXPECT_EQ(Push(7, 0, {RowsGrad({0}, 1.0f)}).status().code(),
              absl::StatusCode::kInvalidArgument);
    int64_t step = -1;
    EXPECT_EQ(Dense(*kernel_, &step), kernel);
    EXPECT_EQ(step, 0);
    EXPECT_EQ(Rows({0, 2}), rows);
    // The next good push is applied as the first step, alone.
    StatusOr<PushResult> good = Push(0, 0, {RowsGrad({0, 2}, 1.0f)});
    ASSERT_TRUE(good.ok()) << good.status();
    EXPECT_TRUE(good->applied);
    EXPECT_EQ(good->global_step, 1);
    ExpectShifted(rows, Rows({0, 2}), -kLearningRate);
  }
}

// Pulls cut large variables into pieces of at most kMaxPieceBytes, give the
// rows asked for in order, and with slots each optimizer slot and its
// update count.
TEST_F(ParamStoreTest, GatherCutsPiecesAndGivesSlots) {
  Start("async", 1, 2, "adagrad");
  ASSERT_TRUE(Push(0, 0, {RowsGrad({0, 4}, 2.0f)}).ok());
  GatherRequest request;
  request.sparse.push_back({table_->name, {}, true});
  request.slots = true;
  CollectingSink sink;
  StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
  ASSERT_TRUE(r.ok()) << r.status();
  sink.Finish();
  EXPECT_EQ(r->global_step, 1);
  ASSERT_EQ(r->slot_steps.count(table_->name), 1u);
  EXPECT_EQ(r->slot_steps.at(table_->name), 1);
  const int64_t cols = PieceCols(table_->shape);
  std::map<std::string, int64_t> rows_of;
  std::map<std::string, std::vector<float>> first_rows;
  for (const Got& g : sink.got) {
    ASSERT_EQ(g.name, table_->name);
    EXPECT_LE(g.rows * g.cols * 4, kMaxPieceBytes);
    ASSERT_EQ(int64_t(g.ids.size()), g.rows);
    // ps:0 of 2 holds the even rows, in order.
    for (size_t i = 0; i < g.ids.size(); ++i) {
      ASSERT_EQ(g.ids[i], 2 * (rows_of[g.slot] + int64_t(i)));
    }
    if (rows_of[g.slot] == 0) first_rows[g.slot] = g.values;
    rows_of[g.slot] += g.rows;
  }
  ASSERT_EQ(rows_of.size(), 2u);
  EXPECT_EQ(rows_of[""], 100000);
  EXPECT_EQ(rows_of["accumulator"], 100000);
  EXPECT_GT(sink.got.size(), 2u) << "1.6 MB in one piece";
  // Rows 0 (local 0) and 4 (local 2) were pushed: their accumulators grew
  // by 2^2 from 0.1; row 2 (local 1) was not.
  const std::vector<float>& acc = first_rows["accumulator"];
  EXPECT_FLOAT_EQ(acc[0], 4.1f);
  EXPECT_FLOAT_EQ(acc[size_t(cols)], 0.1f);
  EXPECT_FLOAT_EQ(acc[size_t(2 * cols)], 4.1f);

  // A dense variable comes in row ranges; without slots, no slot steps.
  GatherRequest dense;
  dense.dense.push_back(kernel_->name);
  CollectingSink dense_sink;
  r = stores_[1]->Gather(dense, dense_sink);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->slot_steps.empty());
  ASSERT_EQ(dense_sink.got.size(), 1u);
  auto [begin, end] = Partition{2}.DenseRange(kernel_->shape[0], 1);
  EXPECT_EQ(dense_sink.got[0].row_offset, begin);
  EXPECT_EQ(dense_sink.got[0].rows, end - begin);
  EXPECT_TRUE(dense_sink.got[0].ids.empty());
}

TEST_F(ParamStoreTest, GatherRefusesRowsAndVariablesItDoesNotHold) {
  Start("async", 1, 2);
  const int64_t odd[] = {0, 3};
  const int64_t negative[] = {-2};
  const int64_t past[] = {200000};
  for (std::span<const int64_t> ids :
       {std::span<const int64_t>(odd), std::span<const int64_t>(negative),
        std::span<const int64_t>(past)}) {
    GatherRequest request;
    request.dense.push_back(kernel_->name);
    request.sparse.push_back({table_->name, ids, false});
    CollectingSink sink;
    StatusOr<GatherResult> r = stores_[0]->Gather(request, sink);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_TRUE(sink.got.empty()) << "pieces given before the refusal";
  }
  for (const std::string_view name :
       {std::string_view("no/such"), std::string_view(table_->name)}) {
    GatherRequest request;
    request.dense.push_back(name);
    CollectingSink sink;
    EXPECT_EQ(stores_[0]->Gather(request, sink).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // A sink that gives up ends the gather.
  GatherRequest request;
  request.sparse.push_back({table_->name, {}, true});
  CollectingSink sink;
  sink.RefuseAfter(1);
  EXPECT_EQ(stores_[0]->Gather(request, sink).status().code(),
            absl::StatusCode::kCancelled);
}

// A pull for the next sync step waits for it, can be cancelled while it
// waits, and a pull for a step beyond the next is answered at once.
TEST_F(ParamStoreTest, GatherWaitsForMinStepUntilCancelled) {
  Start("sync", 2);
  GatherRequest request;
  request.dense.push_back(kernel_->name);
  request.min_step = 1;
  std::atomic<bool> done{false};
  StatusOr<GatherResult> waited = InternalError("not run");
  std::thread puller([&] {
    CollectingSink sink;
    waited = stores_[0]->Gather(request, sink);
    done = true;
  });
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(done) << "answered before the step was applied";
  ASSERT_TRUE(Push(1, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  puller.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->global_step, 1);

  request.min_step = 2;
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  const auto started = std::chrono::steady_clock::now();
  CollectingSink sink;
  StatusOr<GatherResult> cancelled =
      stores_[0]->Gather(request, sink, [&] { return cancel.load(); });
  canceller.join();
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled)
      << cancelled.status();
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_TRUE(sink.got.empty());

  // A PS restarted from an older checkpoint answers a later step at once.
  request.min_step = 50;
  StatusOr<GatherResult> behind = stores_[0]->Gather(request, sink);
  ASSERT_TRUE(behind.ok()) << behind.status();
  EXPECT_EQ(behind->global_step, 1);

  // Shutdown ends a wait too, saying why: the step waited for will never
  // come, so no values are handed out as if of it.
  request.min_step = 2;
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stores_[0]->Shutdown("the chief failed: disk full");
  });
  CollectingSink after;
  StatusOr<GatherResult> stopped = stores_[0]->Gather(request, after);
  stopper.join();
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kAborted)
      << stopped.status();
  EXPECT_EQ(std::string(Message(stopped.status())),
            "this parameter server was shut down (the chief failed: disk "
            "full); the run is over");
  EXPECT_TRUE(after.got.empty());
  EXPECT_TRUE(stores_[0]->WaitForShutdown(0ms));
  EXPECT_EQ(stores_[0]->shutdown_reason(), "the chief failed: disk full");

  // A pull of the current values still answers (the chief's checkpoint);
  // a push is refused (a worker still training learns the run is over
  // rather than training on against a server that applies nothing).
  request.min_step = 0;
  StatusOr<GatherResult> current = stores_[0]->Gather(request, after);
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_EQ(current->global_step, 1);
  Status pushed = Push(0, 1, {DenseGrad(*kernel_, 1.0f)}).status();
  EXPECT_EQ(pushed.code(), absl::StatusCode::kAborted) << pushed;
}

TEST_F(ParamStoreTest, RecordsHowLongEachPullWaitedForItsStep) {
  Start("sync", 2);
  GatherRequest request;
  request.dense.push_back(kernel_->name);
  CollectingSink sink;
  // A pull of a step already there waits for nothing, and counts nothing.
  ASSERT_TRUE(stores_[0]->Gather(request, sink).ok());
  EXPECT_TRUE(stores_[0]->barrier_waits_ms().empty());

  request.min_step = 1;
  StatusOr<GatherResult> waited = InternalError("not run");
  std::thread puller([&] {
    CollectingSink pulled;
    waited = stores_[0]->Gather(request, pulled);
  });
  ASSERT_TRUE(Push(0, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(Push(1, 0, {DenseGrad(*kernel_, 1.0f)}).ok());
  puller.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  const std::vector<float> waits = stores_[0]->barrier_waits_ms();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_GE(waits[0], 150.0f);
  EXPECT_LT(waits[0], 5000.0f);
}

TEST_F(ParamStoreTest, WaitForShutdownWaitsThroughStepsAndEndsOnShutdown) {
  Start("async", 1);
  std::atomic<bool> returned{false};
  bool shut = false;
  const auto started = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    shut = stores_[0]->WaitForShutdown(30s);
    returned = true;
  });
  // Steps do not end the wait.
  for (int step = 0; step < 20; ++step) {
    StatusOr<PushResult> r = Push(0, step, {DenseGrad(*kernel_, 1.0f)});
    ASSERT_TRUE(r.ok()) << r.status();
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned);
  EXPECT_EQ(stores_[0]->global_step(), 20);
  stores_[0]->Shutdown("the run finished");
  waiter.join();
  EXPECT_TRUE(shut);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST_F(ParamStoreTest, RefusesOptionsThatAreNoParameterServer) {
  Start("async", 1);
  for (const auto& [index, num_ps] :
       {std::pair{0, 0}, std::pair{2, 2}, std::pair{-1, 1}}) {
    StoreOptions o;
    o.index = index;
    o.num_ps = num_ps;
    EXPECT_EQ(ParamStore::Create(job_, o).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace dtf::runtime
