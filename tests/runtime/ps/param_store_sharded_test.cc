// Each parameter server writes its own shard of a sharded checkpoint; the
// checkpoint restores, row for row and slot for slot, into as many, fewer
// or more parameter servers.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

// A 3001-row table (not a multiple of any PS count here), a dense layer,
// and Adagrad's accumulator as a slot of each.
constexpr char kJob[] = R"(
[schema]
label = "label"
columns = ["label:int", "key:str"]

[[features.hashed]]
name = "key"
buckets = 3001
embedding = 4
wide = false

[model]
type = "mlp"
hidden = [5]

[train]
mode = "async"
seed = 11

[train.optimizer]
type = "adagrad"
learning_rate = 0.5
)";

// Every value of every variable and slot, by "name" or "name/slot", in
// global row order, gathered from every store.
using Values = std::map<std::string, std::vector<float>>;

class Sink final : public PieceSink {
 public:
  explicit Sink(Values* out) : out_(out) {}
  std::byte* Piece(const PieceInfo& info) override {
    const std::string key = info.slot.empty()
                                ? std::string(info.name)
                                : StrCat(info.name, "/", info.slot);
    std::vector<float>& all = (*out_)[key];
    int64_t size = 1;
    for (int64_t d : info.shape) size *= d;
    all.resize(size_t(size));
    pending_.push_back({key, info.cols, info.row_offset,
                        std::vector<int64_t>(info.ids.begin(), info.ids.end()),
                        std::vector<float>(size_t(info.rows * info.cols))});
    // A PS holding no rows of a variable answers with an empty piece.
    pending_.back().values.reserve(1);
    return reinterpret_cast<std::byte*>(pending_.back().values.data());
  }
  void Finish() {
    for (const Pending& p : pending_) {
      std::vector<float>& all = (*out_)[p.key];
      const int64_t rows = int64_t(p.values.size()) / p.cols;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t global =
            p.ids.empty() ? p.row_offset + r : p.ids[size_t(r)];
        std::memcpy(all.data() + global * p.cols, &p.values[size_t(r * p.cols)],
                    size_t(p.cols) * 4);
      }
    }
  }

 private:
  struct Pending {
    std::string key;
    int64_t cols;
    int64_t row_offset;
    std::vector<int64_t> ids;
    std::vector<float> values;
  };
  Values* out_;
  std::vector<Pending> pending_;
};

class ParamStoreShardedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.Join("job.toml");
    dtf::testing::WriteFile(path, kJob);
    StatusOr<JobFile> job = LoadJobFile(path, {});
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    StatusOr<std::vector<VariableSpec>> layout =
        Model::Layout(*layer, *job_.model);
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = *std::move(layout);
  }

  std::vector<std::unique_ptr<ParamStore>> Stores(
      int n, const std::string& restore_from = "") {
    std::vector<std::unique_ptr<ParamStore>> stores;
    for (int p = 0; p < n; ++p) {
      StoreOptions o;
      o.index = p;
      o.num_ps = n;
      o.num_workers = 1;
      o.restore_from = restore_from;
      StatusOr<std::unique_ptr<ParamStore>> s = ParamStore::Create(job_, o);
      EXPECT_TRUE(s.ok()) << s.status();
      if (!s.ok()) return {};
      stores.push_back(*std::move(s));
    }
    return stores;
  }

  // A step on every store: a gradient of `g` for each of its rows of the
  // table with an id divisible by 3, and for every dense variable's rows.
  void Train(const std::vector<std::unique_ptr<ParamStore>>& stores, float g) {
    const Partition partition{int(stores.size())};
    for (size_t p = 0; p < stores.size(); ++p) {
      std::vector<std::vector<int64_t>> ids;
      std::vector<std::vector<float>> values;
      std::vector<PieceView> pieces;
      ids.reserve(layout_.size());
      values.reserve(layout_.size());
      for (const VariableSpec& v : layout_) {
        if (!v.trainable) continue;
        const int64_t cols = PieceCols(v.shape);
        PieceView piece;
        piece.name = v.name;
        if (v.sparse) {
          ids.emplace_back();
          for (int64_t id = int64_t(p); id < v.shape[0];
               id += int64_t(stores.size())) {
            if (id % 3 == 0) ids.back().push_back(id);
          }
          piece.ids = ids.back();
          piece.rows = int64_t(ids.back().size());
        } else {
          const auto [begin, end] = partition.DenseRange(v.shape[0], int(p));
          piece.row_offset = begin;
          piece.rows = end - begin;
        }
        values.emplace_back(size_t(piece.rows * cols), g * float(p + 1));
        piece.values = std::as_bytes(std::span<const float>(values.back()));
        pieces.push_back(piece);
      }
      StatusOr<PushResult> pushed = stores[p]->Push(PushHeader{}, pieces);
      ASSERT_TRUE(pushed.ok()) << pushed.status();
    }
  }

  Values All(const std::vector<std::unique_ptr<ParamStore>>& stores) {
    Values values;
    for (const auto& store : stores) {
      GatherRequest request;
      for (const VariableSpec& v : layout_) {
        if (v.sparse) {
          request.sparse.push_back({v.name, {}, true});
        } else {
          request.dense.push_back(v.name);
        }
      }
      request.slots = true;
      Sink sink(&values);
      StatusOr<GatherResult> r = store->Gather(request, sink);
      EXPECT_TRUE(r.ok()) << r.status();
      sink.Finish();
    }
    return values;
  }

  // Every store's shard, then the chief's, committed as step `step`.
  std::string Save(const std::vector<std::unique_ptr<ParamStore>>& stores,
                   int64_t step) {
    const int n = int(stores.size());
    const std::string prefix = ShardedCheckpointPrefix(dir_.path(), step);
    std::vector<ShardedIndexEntries> shards;
    std::vector<int64_t> steps;
    for (int p = 0; p < n; ++p) {
      StatusOr<SaveShardResult> saved =
          stores[size_t(p)]->SaveShard({prefix, p, n + 1, 0});
      EXPECT_TRUE(saved.ok()) << saved.status();
      shards.push_back(saved->entries);
      steps.push_back(saved->global_step);
    }
    auto chief = ShardWriter::Open(prefix, n, n + 1);
    EXPECT_TRUE(chief.ok()) << chief.status();
    Bundle state;
    state.AddInt64s(std::string(kCheckpointGlobalStepEntry),
                    std::vector<int64_t>{step});
    state.AddInt64s(std::string(kCheckpointPsStepsEntry), steps);
    state.AddInt64s(std::string(kShardedNumPsEntry), std::vector<int64_t>{n});
    EXPECT_TRUE((*chief)->AddBundle(state).ok());
    shards.push_back(*(*chief)->Finish());
    Status st = CommitShardedCheckpoint(dir_.path(), step, shards, 3);
    EXPECT_TRUE(st.ok()) << st;
    return prefix;
  }

  dtf::testing::TempDir dir_;
  JobFile job_;
  std::vector<VariableSpec> layout_;
};

TEST_F(ParamStoreShardedTest, RestoresIntoAnyNumberOfParameterServers) {
  auto three = Stores(3);
  ASSERT_EQ(three.size(), 3u);
  Train(three, 0.25f);
  Train(three, -0.5f);
  const Values want = All(three);
  ASSERT_GT(want.size(), 4u);
  // Trained: the values are not the initial ones.
  EXPECT_NE(want, All(Stores(3)));
  const std::string prefix = Save(three, 2);
  for (int n : {3, 1, 2, 4}) {
    SCOPED_TRACE(StrCat(n, " parameter servers"));
    auto restored = Stores(n, prefix);
    ASSERT_EQ(restored.size(), size_t(n));
    EXPECT_EQ(All(restored), want);
    for (const auto& s : restored) EXPECT_EQ(s->global_step(), 2);
  }
}

TEST_F(ParamStoreShardedTest, ACheckpointOfAnotherJobIsRefusedNamingIt) {
  auto two = Stores(2);
  const std::string prefix = Save(two, 1);
  const std::string path = dir_.Join("other.toml");
  std::string other = kJob;
  other.replace(other.find("buckets = 3001"), 14, "buckets = 3002");
  dtf::testing::WriteFile(path, other);
  StatusOr<JobFile> job = LoadJobFile(path, {});
  ASSERT_TRUE(job.ok()) << job.status();
  StoreOptions o;
  o.num_ps = 2;
  o.restore_from = prefix;
  StatusOr<std::unique_ptr<ParamStore>> s = ParamStore::Create(*job, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(Message(s.status()).find(prefix + ".index"), std::string::npos)
      << s.status();
}

}  // namespace
}  // namespace dtf::runtime
