// dtf predict --profile: the input split over the local profile's workers
// gives exactly the one-process output, shard by shard and merged; bad input
// fails naming it and leaves no output behind.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/batch/shards.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;
using ::dtf::launch::MergeShardOutputs;
using ::dtf::launch::ShardFromFrame;
using ::dtf::launch::ShardIndex;
using ::dtf::launch::ShardIndexFromText;
using ::dtf::launch::ShardIndexPath;
using ::dtf::launch::ShardOutput;
using ::dtf::launch::ShardOutputPath;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Result {
  int code = -1;
  std::string err;
};

class PredictProfileTest : public ::testing::Test {
 protected:
  // The Titanic example trained for a few steps, once for every test: its
  // records are 2 train shards and 2 eval shards.
  static void SetUpTestSuite() {
    temp_ = new testing::TempDir("dtf_predict_profile_test");
    std::string job = testing::ReadFile(std::string(DTF_SOURCE_DIR) +
                                        "/examples/titanic/dtf.toml");
    job = std::regex_replace(job, std::regex("csv = \\[\"[^\"]*\"\\]"),
                             "csv = [\"" + std::string(DTF_SHARED_DIR) +
                                 "/data/titanic/train.csv\"]");
    testing::WriteFile(temp_->Join("dtf.toml"), job);
    ASSERT_EQ(Run("gen-records --job dtf.toml").code, 0);
    const Result r = Run("train --job dtf.toml --steps 5 --no-eval --quiet");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete temp_;
    temp_ = nullptr;
  }

  // dtf ARGS in the test's directory, with `env` (NAME=VALUE ...) set;
  // `raw`: ARGS is a shell command of its own.
  static Result Run(const std::string& args, const std::string& env = "",
                    bool raw = false) {
    const std::string cmd =
        "cd '" + temp_->path() + "' && " +
        (env.empty() ? "" : "env " + env + " ") +
        (raw ? args : "'" + std::string(DTF_BINARY) + "' " + args) +
        " >out.txt 2>err.txt </dev/null";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = testing::ReadFile(temp_->Join("err.txt"));
    return r;
  }
  static std::string Read(const std::string& name) {
    return testing::ReadFile(temp_->Join(name));
  }
  static bool Exists(const std::string& name) {
    return fs::exists(temp_->Join(name));
  }
  // The files left beside `output` whose names start with it.
  static std::vector<std::string> Leftovers(const std::string& output) {
    std::vector<std::string> out;
    for (const std::string& name : temp_->List()) {
      if (name.starts_with(output + ".")) out.push_back(name);
    }
    return out;
  }

  // Scores `input` in one process and over `workers` tasks of the local
  // profile; both outputs, byte for byte.
  void ExpectSameAsOneProcess(const std::string& input,
                              const std::string& format, int workers,
                              const std::string& extra = "") {
    const std::string base = "predict --model out/model --input '" + input +
                             "' --format " + format + " " + extra;
    Result r = Run(base + " --output one." + format);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string sharded = "sharded." + format;
    r = Run(base + " --profile local --workers " + std::to_string(workers) +
            " --output " + sharded);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string one = Read("one." + format);
    EXPECT_GT(one.size(), 1000u);
    EXPECT_EQ(Read(sharded), one);
    EXPECT_THAT(r.err, HasSubstr("records scored (shard 0: "));
    EXPECT_THAT(r.err, HasSubstr("merged " + std::to_string(workers) +
                                 " shards into " + sharded));
    // The shards and their indexes are gone.
    EXPECT_THAT(Leftovers(sharded), IsEmpty());
  }

  static testing::TempDir* temp_;
};

testing::TempDir* PredictProfileTest::temp_ = nullptr;

// 2 files over 2 workers: whole files each.
TEST_F(PredictProfileTest, CsvByWholeFilesMatchesOneProcess) {
  ExpectSameAsOneProcess("records/train/*", "csv", 2, "--keep Ticket,Sex");
}

TEST_F(PredictProfileTest, JsonlByWholeFilesMatchesOneProcess) {
  ExpectSameAsOneProcess("records/eval/*", "jsonl", 2, "--keep Ticket");
}

// 2 files over 3 workers, and 1 file over 2: records split by index.
TEST_F(PredictProfileTest, JsonlByRecordsMatchesOneProcess) {
  ExpectSameAsOneProcess("records/train/*", "jsonl", 3, "--batch-size 64");
}

TEST_F(PredictProfileTest, CsvByRecordsMatchesOneProcess) {
  ExpectSameAsOneProcess("records/train/part-00000-of-00002*", "csv", 2,
                         "--keep Ticket");
}

// What each task runs: shard k of W, its rows and its index beside the
// output, which merge into the one-process output.
TEST_F(PredictProfileTest, ShardOutputsMergeInInputOrder) {
  const std::string base =
      "predict --model out/model --input 'records/*/*' --format csv";
  ASSERT_EQ(Run(base + " --output all.csv").code, 0);
  std::vector<ShardOutput> shards;
  for (int k = 0; k < 3; ++k) {
    const std::string shard = ShardOutputPath("s.csv", k, 3);
    const Result r = Run(base + " --shard " + std::to_string(k) +
                         " --of 3 --output " + shard);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(Exists(shard));
    ASSERT_TRUE(Exists(ShardIndexPath(shard)));
    StatusOr<ShardIndex> index =
        ShardIndexFromText(Read(ShardIndexPath(shard)), shard);
    ASSERT_TRUE(index.ok()) << index.status();
    // 4 files over 3 shards: shard 0 has files 0 and 3, the others one.
    EXPECT_EQ(index->files.size(), k == 0 ? 2u : 1u);
    EXPECT_GT(index->rows, 0);
    shards.push_back({shard, Read(shard), *index});
  }
  StatusOr<std::string> merged = MergeShardOutputs(shards, 4, /*csv=*/true);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, Read("all.csv"));
}

// A record scores the same in any batch: what makes a split input match.
TEST_F(PredictProfileTest, ScoresDoNotDependOnTheBatch) {
  const std::string base =
      "predict --model out/model --input 'records/train/*' --output ";
  ASSERT_EQ(Run(base + "b1024.jsonl").code, 0);
  for (const char* size : {"1", "7", "100"}) {
    ASSERT_EQ(Run(base + "b.jsonl --batch-size " + size).code, 0);
    EXPECT_EQ(Read("b.jsonl"), Read("b1024.jsonl")) << "--batch-size " << size;
  }
}

TEST_F(PredictProfileTest, MissingInputFailsNamingIt) {
  testing::WriteFile(temp_->Join("kept.jsonl"), "old\n");
  const Result r =
      Run("predict --model out/model --input records/train/nope.tfrecord "
          "--profile local --workers 2 --output kept.jsonl");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("nope.tfrecord"));
  EXPECT_EQ(Read("kept.jsonl"), "old\n");
  EXPECT_THAT(Leftovers("kept.jsonl"), IsEmpty());
}

// A file that is not TFRecord: the task that reads it fails, the failure
// names it and quotes its error, the other task is stopped, and neither a
// merged output nor a shard is left.
TEST_F(PredictProfileTest, FailedShardNamesTaskAndLeavesNoOutput) {
  fs::create_directories(temp_->Join("bad"));
  testing::WriteFile(temp_->Join("bad/zzz.tfrecord"),
                     std::string(64, 'x') + "not a record");
  const Result r =
      Run("predict --model out/model --input bad/zzz.tfrecord "
          "--input 'records/train/*' --profile local --workers 2 "
          "--output none.jsonl");
  EXPECT_NE(r.code, 0);
  // Sorted, bad/zzz.tfrecord is file 0: worker 0's.
  EXPECT_THAT(r.err, HasSubstr("task worker:0 exited with status"));
  EXPECT_THAT(r.err, HasSubstr("zzz.tfrecord"));
  EXPECT_FALSE(Exists("none.jsonl"));
  EXPECT_THAT(Leftovers("none.jsonl"), IsEmpty());
}

// A --keep the model lacks stops the launcher before any task starts.
// The temporary files a task stopped while writing its shard leaves
// (".<shard>.tmp.XXXXXX") are removed with the shards; others are kept.
TEST_F(PredictProfileTest, StoppedTasksTemporaryFilesAreRemoved) {
  testing::WriteFile(temp_->Join(".t.jsonl.shard-0-of-2.tmp.a1b2c3"), "x");
  testing::WriteFile(temp_->Join(".t.jsonl.shard-1-of-2.rows.tmp.d4e5f6"), "x");
  testing::WriteFile(temp_->Join(".t.jsonl.shard-1-of-2.keep"), "x");
  const Result r =
      Run("predict --model out/model --input 'records/train/*' "
          "--profile local --workers 2 --output t.jsonl");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Exists("t.jsonl"));
  EXPECT_FALSE(Exists(".t.jsonl.shard-0-of-2.tmp.a1b2c3"));
  EXPECT_FALSE(Exists(".t.jsonl.shard-1-of-2.rows.tmp.d4e5f6"));
  EXPECT_TRUE(Exists(".t.jsonl.shard-1-of-2.keep"));
}

TEST_F(PredictProfileTest, BadKeepFailsBeforeAnyTask) {
  const Result r =
      Run("predict --model out/model --input 'records/train/*' --keep Nope "
          "--profile local --workers 2 --output k.jsonl");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("has no column \"Nope\""));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("worker:")));
  EXPECT_FALSE(Exists("k.jsonl"));
}

TEST_F(PredictProfileTest, ProfileNeedsAnOutputFile) {
  const Result r = Run(
      "predict --model out/model --input 'records/train/*' --profile local");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--profile: needs --output FILE"));
}

// A Kubernetes profile's pods read the input from its data volume, as they
// see it: a profile without one, or an input elsewhere, is refused naming
// the profile, before anything starts.
TEST_F(PredictProfileTest, KubernetesInputMustBeOnTheDataVolume) {
  fs::create_directories(temp_->Join("profiles"));
  testing::WriteFile(temp_->Join("profiles/k8.toml"),
                     "backend = \"kubernetes\"\nworkers = 2\n"
                     "[kubernetes]\nimage = \"dtf:test\"\n");
  Result r =
      Run("predict --model out/model --input '/data/records/*' "
          "--profile k8 --output k8.jsonl");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("profiles/k8.toml: dtf predict on Kubernetes "
                               "reads its input from the profile's data "
                               "volume, and it has none"));
  testing::WriteFile(temp_->Join("profiles/k8d.toml"),
                     "backend = \"kubernetes\"\nworkers = 2\n"
                     "[kubernetes]\nimage = \"dtf:test\"\n"
                     "data = { pvc = \"eval\", mount_path = \"/data\" }\n");
  r =
      Run("predict --model out/model --input 'records/train/*' "
          "--profile k8d --output k8.jsonl");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--input records/train/*: not on the data "
                               "volume, which the pods see at /data ("));
  EXPECT_THAT(r.err, HasSubstr("profiles/k8d.toml:5:8)"));
  EXPECT_FALSE(Exists("k8.jsonl"));
  EXPECT_FALSE(Exists("k8-runs"));
}

// --render writes the run's objects: the model shipped in a ConfigMap
// mounted where the pods' dtf predict reads it, each pod scoring the shard
// of its completion index and holding it for the launcher.
TEST_F(PredictProfileTest, KubernetesRenderShipsTheModel) {
  fs::create_directories(temp_->Join("profiles"));
  testing::WriteFile(temp_->Join("profiles/k8r.toml"),
                     "backend = \"kubernetes\"\nworkers = 3\nthreads = 2\n"
                     "[kubernetes]\nimage = \"dtf:test\"\n"
                     "data = { pvc = \"eval\", mount_path = \"/data\" }\n");
  const Result r =
      Run("predict --model out/model --input '/data/eval/*' --format csv "
          "--keep Sex --profile k8r --output k8.csv --render rendered");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string job = Read("rendered/job.yaml");
  for (const char* want :
       {"completions: 3\n", "maxFailedIndexes: 0\n",
        "- \"--model\"\n        - \"/etc/dtf/model\"\n",
        "- \"--input\"\n        - \"/data/eval/*\"\n",
        "- \"--keep\"\n        - \"Sex\"\n",
        "- \"--threads\"\n        - \"2\"\n",
        "- \"--shard-from-env\"\n        - \"JOB_COMPLETION_INDEX\"\n",
        "- \"--of\"\n        - \"3\"\n", "claimName: \"eval\"\n"}) {
    EXPECT_THAT(job, HasSubstr(want));
  }
  const std::string config = Read("rendered/configmap.yaml");
  EXPECT_THAT(config, HasSubstr("\n  model.toml: \""));
  EXPECT_THAT(config, HasSubstr("\n  variables.dtf: \""));
  EXPECT_FALSE(Exists("k8.csv"));
  // A model the pods read from the data volume is not shipped.
  const Result on_volume =
      Run("predict --model /data/model --input '/data/eval/*' --profile k8r "
          "--output k8.csv --render rendered2");
  ASSERT_EQ(on_volume.code, 0) << on_volume.err;
  EXPECT_FALSE(Exists("rendered2/configmap.yaml"));
  EXPECT_THAT(Read("rendered2/job.yaml"),
              HasSubstr("- \"--model\"\n        - \"/data/model\"\n"));
  // --render is for Kubernetes profiles only.
  const Result local =
      Run("predict --model out/model --input 'records/eval/*' --profile local "
          "--output l.jsonl --render rendered3");
  EXPECT_EQ(local.code, 2) << local.err;
  EXPECT_THAT(local.err, HasSubstr("--render: only for a Kubernetes profile"));
}

// Without a cluster (no kubectl), the run stops before anything is made.
TEST_F(PredictProfileTest, KubernetesWithoutKubectlIsAClearError) {
  fs::create_directories(temp_->Join("profiles"));
  fs::create_directories(temp_->Join("empty-bin"));
  testing::WriteFile(temp_->Join("profiles/k8n.toml"),
                     "backend = \"kubernetes\"\nworkers = 2\n"
                     "[kubernetes]\nimage = \"dtf:test\"\n"
                     "data = { pvc = \"eval\" }\n");
  const Result r =
      Run("predict --model out/model --input '/data/eval/*' --profile k8n "
          "--output k8n.jsonl --runs-dir k8n-runs",
          "PATH=" + temp_->Join("empty-bin"));
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("kubernetes: kubectl cannot be run"));
  EXPECT_FALSE(Exists("k8n.jsonl"));
  EXPECT_FALSE(Exists("k8n-runs"));
}

// A pod's task: the shard from JOB_COMPLETION_INDEX, held once scored
// until `dtf task shard-release`, its index and output fetched as one
// frame; unreleased, it gives up after --hold-for-fetch seconds.
TEST_F(PredictProfileTest, ShardIsHeldUntilFetchedAndReleased) {
  const std::string task =
      "predict --model out/model --input 'records/eval/*' --of 2 "
      "--shard-from-env JOB_COMPLETION_INDEX --output held";
  const Result r = Run(
      "sh -c '" + std::string(DTF_BINARY) + " " + task +
          " --hold-for-fetch 60 2>held.err & pid=$!; "
          "while ! grep -q dtf-predict-ready held.err; do sleep 0.1; done; " +
          DTF_BINARY + " task shard-fetch held >frame && " + DTF_BINARY +
          " task shard-release held; wait $pid'",
      "JOB_COMPLETION_INDEX=1", /*raw=*/true);
  ASSERT_EQ(r.code, 0) << r.err << Read("held.err");
  StatusOr<ShardOutput> shard = ShardFromFrame(Read("frame"), "frame");
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->text, Read("held"));
  EXPECT_EQ(shard->index.inputs, 2);
  EXPECT_EQ(shard->index.files.size(), 1u);
  EXPECT_GT(shard->index.rows, 10);
  // Released once: a second fetch is refused.
  EXPECT_EQ(Run("task shard-fetch held").code, 2);

  // A shard written again where one was released is held again.
  const Result lost =
      Run(task + " --hold-for-fetch 1", "JOB_COMPLETION_INDEX=0");
  EXPECT_NE(lost.code, 0);
  EXPECT_THAT(lost.err, HasSubstr("shard 0 of 2: not fetched within 1 s"));
  const Result bad = Run(task, "JOB_COMPLETION_INDEX=two");
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--shard-from-env JOB_COMPLETION_INDEX: "
                                 "\"two\" is not a shard number"));
}

// A Slurm profile is taken: with no Slurm to submit to (no sbatch on PATH),
// the run fails at sbatch, naming it, and leaves no output or shard.
TEST_F(PredictProfileTest, SlurmProfileRunsUntilSbatch) {
  fs::create_directories(temp_->Join("profiles"));
  testing::WriteFile(temp_->Join("profiles/sl.toml"),
                     "backend = \"slurm\"\nworkers = 2\n[slurm]\nrun_dir = \"" +
                         temp_->Join("slruns") + "\"\n");
  fs::create_directories(temp_->Join("nobin"));
  const std::string cmd =
      "cd '" + temp_->path() + "' && env -u SLURM_JOB_ID PATH='" +
      temp_->Join("nobin") + "' '" + DTF_BINARY +
      "' predict --model out/model --input 'records/train/*' --profile sl "
      "--output sl.jsonl >out.txt 2>err.txt </dev/null";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = testing::ReadFile(temp_->Join("err.txt"));
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("profiles only")));
  EXPECT_THAT(r.err, HasSubstr("sbatch"));
  EXPECT_FALSE(Exists("sl.jsonl"));
  // The run directory holds the plan: each worker's own predict command,
  // its shard in its task directory.
  std::string plan;
  for (const auto& run : fs::directory_iterator(temp_->Join("slruns"))) {
    plan = testing::ReadFile((run.path() / "plan.json").string());
  }
  EXPECT_THAT(plan, HasSubstr("--batch"));
  EXPECT_THAT(plan, HasSubstr("/worker-1/sl.jsonl.shard-1-of-2\""));
  for (const auto& e : fs::recursive_directory_iterator(temp_->path())) {
    EXPECT_EQ(e.path().string().find("sl.jsonl.shard-"), std::string::npos)
        << e.path();
  }
}

}  // namespace
}  // namespace dtf::cli
