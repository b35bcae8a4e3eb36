// Each parameter server writes its own shard of a sharded checkpoint; the
// checkpoint restores, row for row and slot for slot, into as many, fewer
// or more parameter servers. A SavedModel's variables written the same way
// read back row by row; a partition past the memory limit is refused.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/memory_limit.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/export/sharded_export.h"
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

// A SavedModel's variables (variables_only): every variable under its
// own name, no slots; dense variables read whole and table rows read one
// by one (as `dtf predict` reads an export) equal what the stores hold.
TEST_F(ParamStoreShardedTest, VariablesOnlyShardsReadBackRowByRow) {
  auto three = Stores(3);
  ASSERT_EQ(three.size(), 3u);
  Train(three, 0.25f);
  const Values want = All(three);
  const std::string prefix = dir_.Join("variables");
  std::vector<ShardedIndexEntries> shards;
  for (int p = 0; p < 3; ++p) {
    SaveShardRequest request{prefix, p, 4, 0};
    request.variables_only = true;
    StatusOr<SaveShardResult> saved = three[size_t(p)]->SaveShard(request);
    ASSERT_TRUE(saved.ok()) << saved.status();
    shards.push_back(saved->entries);
  }
  auto chief = ShardWriter::Open(prefix, 3, 4);
  ASSERT_TRUE(chief.ok()) << chief.status();
  shards.push_back(*(*chief)->Finish());
  ASSERT_TRUE(CommitShardedBundle(prefix, shards).ok());
  auto reader = ShardedCheckpointReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->Find("slot/deep/key/embedding/accumulator"), nullptr);
  TableRows rows;
  rows.reader = *std::move(reader);
  rows.num_ps = 3;
  for (const VariableSpec& v : layout_) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(rows.reader->Find(CheckpointVariableKey(v.name)), nullptr);
    const std::vector<float>& all = want.at(v.name);
    if (!v.sparse) {
      StatusOr<kernels::Tensor> t = rows.reader->ReadFloats(v.name);
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(std::vector<float>(t->data(), t->data() + t->size()), all);
      continue;
    }
    const int64_t cols = PieceCols(v.shape);
    const std::vector<int64_t> ids = {0, 1, 2, 7, 1500, v.shape[0] - 1};
    kernels::Tensor out = kernels::Tensor::Empty({int64_t(ids.size()), cols});
    Status read = rows.Read(v.name, v.shape[0], ids, &out);
    ASSERT_TRUE(read.ok()) << read;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t c = 0; c < cols; ++c) {
        EXPECT_EQ(out.data()[int64_t(i) * cols + c],
                  all[size_t(ids[i] * cols + c)])
            << "id " << ids[i];
      }
    }
    const std::vector<int64_t> past = {v.shape[0]};
    EXPECT_EQ(rows.Read(v.name, v.shape[0], past, &out).code(),
              StatusCode::kOutOfRange);
  }
}

// A job whose table alone needs 512 MiB on one PS (8,388,608 rows of 8
// floats and Adagrad's accumulator).
std::string BigTableJob() {
  std::string job = kJob;
  job.replace(job.find("buckets = 3001"), 14, "buckets = 8388608");
  job.replace(job.find("embedding = 4"), 13, "embedding = 8");
  return job;
}

TEST_F(ParamStoreShardedTest, APartitionPastTheMemoryLimitIsRefusedNamingIt) {
  const std::string path = dir_.Join("big.toml");
  dtf::testing::WriteFile(path, BigTableJob());
  StatusOr<JobFile> job = LoadJobFile(path, {});
  ASSERT_TRUE(job.ok()) << job.status();
  StoreOptions o;
  o.index = 1;
  o.num_ps = 2;
  MemoryLimit limit;
  limit.source = "a test's limit";
  // Room for 100 MiB more than is in use: the 256 MiB of PS 1's rows and
  // their slot do not fit.
  limit.bytes = MemoryInUse(limit) + (int64_t{164} << 20);
  o.memory_limit = limit;
  StatusOr<std::unique_ptr<ParamStore>> s = ParamStore::Create(*job, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  const std::string m(Message(s.status()));
  EXPECT_NE(m.find("ps:1: table deep/key/embedding"), std::string::npos) << m;
  EXPECT_NE(m.find("its 4194304 rows (of 8388608"), std::string::npos) << m;
  EXPECT_NE(m.find("a test's limit"), std::string::npos) << m;
  // Spread over 64 PS, each one's 8 MiB fit.
  o.num_ps = 64;
  StatusOr<std::unique_ptr<ParamStore>> fits = ParamStore::Create(*job, o);
  EXPECT_TRUE(fits.ok()) << fits.status();
}

// Under a real `ulimit -v` (in a child process) the PS refuses its
// partition with that error instead of dying in an allocation.
TEST_F(ParamStoreShardedTest, UnderUlimitVThePsFailsWithAnErrorNotACrash) {
  const std::string path = dir_.Join("big.toml");
  dtf::testing::WriteFile(path, BigTableJob());
  StatusOr<JobFile> job = LoadJobFile(path, {});
  ASSERT_TRUE(job.ok()) << job.status();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MemoryLimit here{0, "", true};
    rlimit as{};
    as.rlim_cur = as.rlim_max =
        rlim_t(MemoryInUse(here) + (int64_t{300} << 20));
    if (::setrlimit(RLIMIT_AS, &as) != 0) ::_exit(3);
    StoreOptions o;
    o.memory_limit = ReadMemoryLimit();
    if (!o.memory_limit || o.memory_limit->source != "ulimit -v") ::_exit(4);
    StatusOr<std::unique_ptr<ParamStore>> s = ParamStore::Create(*job, o);
    const bool named =
        !s.ok() && s.status().code() == StatusCode::kResourceExhausted &&
        Message(s.status()).find("table deep/key/embedding") !=
            std::string::npos &&
        Message(s.status()).find("ulimit -v") != std::string::npos;
    ::_exit(named ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status))
      << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: setrlimit failed, 4: the limit was not read, 5: no error "
         "naming the table";
}

}  // namespace
}  // namespace dtf::runtime
