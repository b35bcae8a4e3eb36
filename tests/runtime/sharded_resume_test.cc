// Sharded checkpoints in a parameter-server run, every task a thread of
// this process over loopback gRPC: each PS writes its shard, the chief
// commits, and the run's parameter servers restored from it — as many or
// fewer — hold the values the checkpoint holds; the best model and the
// export's SavedModel variables are the PS's shards too.
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/export/sharded_export.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/serve/serve.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";
constexpr char kRun[] = "test-run";

struct Cluster {
  std::vector<std::string> ps, workers;
  std::vector<testing::HeldPort> held;
};

Cluster MakeCluster(int ps, int workers) {
  Cluster c;
  for (int i = 0; i < ps + workers; ++i) {
    c.held.emplace_back();
    (i < ps ? c.ps : c.workers).push_back(c.held.back().address());
  }
  return c;
}

ServeOptions Options(const Cluster& c, Role role, int index) {
  ServeOptions o;
  o.role = role;
  o.index = index;
  o.ps = c.ps;
  o.workers = c.workers;
  o.credentials.run_id = kRun;
  o.credentials.secret = kSecret;
  o.threads = 1;
  return o;
}

// Every variable's values in global row order, by name.
using Values = std::map<std::string, std::vector<float>>;

StatusOr<std::vector<VariableSpec>> Layout(const JobFile& job) {
  DTF_ASSIGN_OR_RETURN(
      FeatureLayer layer,
      FeatureLayer::Create(job.schema, job.features, *job.model));
  return Model::Layout(layer, *job.model);
}

// Every value held by parameter servers `c.ps`, pulled whole.
Values Pull(const JobFile& job, const Cluster& c) {
  StatusOr<std::vector<VariableSpec>> layout = Layout(job);
  EXPECT_TRUE(layout.ok()) << layout.status();
  std::vector<kernels::Tensor> out(layout->size());
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  for (size_t i = 0; i < layout->size(); ++i) {
    const VariableSpec& v = (*layout)[i];
    int64_t cols = 1;
    for (size_t d = 1; d < v.shape.size(); ++d) cols *= v.shape[d];
    if (v.sparse) {
      sparse.push_back({v.name, nullptr, true, v.shape[0], cols, &out[i]});
    } else {
      out[i] = kernels::Tensor::Empty(v.shape);
      dense.push_back({v.name, &out[i]});
    }
  }
  PsClient client(c.ps, {kRun, kSecret, ""}, -1, std::chrono::seconds(10));
  Status st = UnavailableError("not tried");
  for (int i = 0; i < 200 && !st.ok(); ++i) {
    st = client.Pull(dense, sparse, 0);
    if (!st.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(st.ok()) << st;
  Values values;
  for (size_t i = 0; i < layout->size(); ++i) {
    values[(*layout)[i].name].assign(out[i].data(),
                                     out[i].data() + out[i].size());
  }
  EXPECT_TRUE(client.Shutdown("the test is over").ok());
  return values;
}

// The run's parameter servers of `c`, started with the restore flag, and
// every value they restored.
Values Restored(const JobFile& job, const Cluster& c,
                std::vector<std::string>* notes) {
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::vector<std::future<StatusOr<TrainResult>>> tasks;
  for (int p = 0; p < int(c.ps.size()); ++p) {
    tasks.push_back(std::async(std::launch::async, [&, p] {
      ServeOptions o = Options(c, Role::kPs, p);
      o.restore = true;
      o.cancel = &cancel;
      o.on_note = [&](std::string_view text) {
        std::lock_guard<std::mutex> lock(mu);
        notes->emplace_back(text);
      };
      return Serve(job, o);
    }));
  }
  Values values = Pull(job, c);
  for (auto& t : tasks) {
    StatusOr<TrainResult> r = t.get();
    EXPECT_TRUE(r.ok()) << r.status();
  }
  return values;
}

// The titanic job, written into `dir` with its records.
StatusOr<JobFile> TitanicJob(const dtf::testing::TempDir& dir) {
  DTF_ASSIGN_OR_RETURN(std::string path,
                       testing::WriteExampleJob("titanic", dir, {}));
  return testing::LoadJobWithRecords(path);
}

TEST(ShardedResume, EachPsSavesItsShardAndAnyNumberOfPsRestoresIt) {
  dtf::testing::TempDir dir;
  StatusOr<JobFile> loaded = TitanicJob(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  JobFile job = *std::move(loaded);
  job.train.epochs = 2;
  job.train.checkpoint_every_steps = 7;
  job.train.keep_checkpoints = 2;
  job.train.sharded_checkpoints = true;
  {
    const Cluster c = MakeCluster(3, 2);
    std::vector<std::future<StatusOr<TrainResult>>> tasks;
    for (int i = 0; i < 5; ++i) {
      tasks.push_back(std::async(std::launch::async, [&, i] {
        return Serve(job, Options(c, i < 3 ? Role::kPs : Role::kWorker,
                                  i < 3 ? i : i - 3));
      }));
    }
    for (auto& t : tasks) {
      StatusOr<TrainResult> r = t.get();
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }
  const std::string out = job.train.output_dir;
  // No whole-model checkpoint: the shards of every PS and the chief's.
  EXPECT_FALSE(
      std::filesystem::exists(out + "/" + std::string(kCheckpointFile)));
  const std::vector<ShardedGeneration> kept = ListShardedCheckpoints(out);
  ASSERT_EQ(kept.size(), 2u);
  const std::string prefix = kept[0].prefix;
  for (int k = 0; k < 4; ++k) {
    EXPECT_TRUE(std::filesystem::exists(ShardedDataPath(prefix, k, 4))) << k;
  }
  auto reader = ShardedCheckpointReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  StatusOr<Bundle> state = (*reader)->ReadUnsliced();
  ASSERT_TRUE(state.ok()) << state.status();
  StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*state);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->run_id, kRun);
  EXPECT_EQ(info->job_fingerprint, CheckpointFingerprint(job));
  ASSERT_EQ(info->ps_steps.size(), 3u);
  // Sync mode: one global step on every shard.
  EXPECT_EQ(info->ps_steps[0], info->ps_steps[1]);
  EXPECT_EQ(info->ps_steps[0], info->ps_steps[2]);
  EXPECT_EQ(info->global_step, kept[0].step);

  std::vector<std::string> notes;
  const Values three = Restored(job, MakeCluster(3, 1), &notes);
  bool said = false;
  for (const std::string& n : notes) {
    said = said || n.find("restoring from " + prefix) != std::string::npos;
  }
  EXPECT_TRUE(said) << "no PS said it restored " << prefix;
  // Trained, and restored: not the initial values.
  job.train.output_dir = dir.Join("fresh");
  const Values initial = Restored(job, MakeCluster(3, 1), &notes);
  EXPECT_NE(three, initial);
  job.train.output_dir = out;
  for (int n : {2, 1}) {
    SCOPED_TRACE(StrCat(n, " parameter servers"));
    EXPECT_EQ(Restored(job, MakeCluster(n, 1), &notes), three);
  }

  // The best model and the export, written by the PS too: the export's
  // SavedModel variables are the best model's, or the last values when
  // the last evaluation was the best; the chief wrote no whole copy.
  const std::string model = out + "/" + std::string(kExportDir);
  EXPECT_FALSE(
      std::filesystem::exists(model + "/" + std::string(kVariablesFile)));
  EXPECT_FALSE(
      std::filesystem::exists(out + "/" + std::string(kBestCheckpointFile)));
  const auto values = [&](const std::string& bundle_prefix) {
    Values v;
    auto r = ShardedCheckpointReader::Open(bundle_prefix);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return v;
    EXPECT_EQ((*r)->num_shards(), 4);
    for (const auto& [name, unused] : three) {
      StatusOr<kernels::Tensor> t = (*r)->ReadFloats(name);
      EXPECT_TRUE(t.ok()) << t.status();
      if (t.ok()) v[name].assign(t->data(), t->data() + t->size());
    }
    return v;
  };
  const Values best = values(ShardedBestPrefix(out));
  const Values exported = values(model + "/saved_model/variables/variables");
  ASSERT_EQ(exported.size(), three.size());
  // Tables in the parameter servers' order: compare dense variables.
  StatusOr<std::vector<VariableSpec>> layout = Layout(job);
  ASSERT_TRUE(layout.ok()) << layout.status();
  bool as_best = true, as_last = true;
  for (const VariableSpec& v : *layout) {
    if (v.sparse) continue;
    as_best = as_best && exported.at(v.name) == best.at(v.name);
    as_last = as_last && exported.at(v.name) == three.at(v.name);
  }
  EXPECT_TRUE(as_best || as_last);
  StatusOr<LoadedModel> loaded_export = LoadExportedModel(model);
  ASSERT_TRUE(loaded_export.ok()) << loaded_export.status();
  EXPECT_NE(loaded_export->rows, nullptr);
}

// A run whose tasks all stopped after the checkpoint of its last step, and
// were started again with the restore flag, takes no step more: each
// worker learns the global step its parameter servers restored before it
// steps.
TEST(ShardedResume, ARunResumedAtItsLastStepTakesNoStepMore) {
  dtf::testing::TempDir dir;
  StatusOr<JobFile> loaded = TitanicJob(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  JobFile job = *std::move(loaded);
  job.train.steps = 14;
  job.train.checkpoint_every_steps = 7;
  job.train.sharded_checkpoints = true;
  const auto run = [&](bool restore) {
    const Cluster c = MakeCluster(2, 2);
    std::vector<std::future<StatusOr<TrainResult>>> tasks;
    for (int i = 0; i < 4; ++i) {
      tasks.push_back(std::async(std::launch::async, [&, i] {
        ServeOptions o =
            Options(c, i < 2 ? Role::kPs : Role::kWorker, i < 2 ? i : i - 2);
        o.restore = restore;
        return Serve(job, o);
      }));
    }
    std::vector<StatusOr<TrainResult>> results;
    for (auto& t : tasks) results.push_back(t.get());
    return results;
  };
  for (const StatusOr<TrainResult>& r : run(false)) {
    ASSERT_TRUE(r.ok()) << r.status();
  }
  const std::vector<StatusOr<TrainResult>> resumed = run(true);
  for (size_t i = 0; i < resumed.size(); ++i) {
    ASSERT_TRUE(resumed[i].ok()) << "task " << i << ": " << resumed[i].status();
  }
  for (size_t w = 0; w < 2; ++w) {
    EXPECT_EQ(resumed[2 + w]->steps_run, 0) << "worker:" << w;
    EXPECT_EQ(resumed[2 + w]->steps, 14) << "worker:" << w;
  }
}

}  // namespace
}  // namespace dtf::runtime
