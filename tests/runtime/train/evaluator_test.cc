// Evaluate's input cache (EvalInputCache): later evaluations of a run take
// the split's transformed batches from it, with the same metrics.
#include "lib/runtime/train/evaluator.h"

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/trainer.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::LoadJobWithRecords;
using testing::WriteExampleJob;

TEST(Evaluate, LaterEvaluationsTakeTheCachedInputs) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  TrainOptions options;
  options.epochs = 1;
  options.eval = false;
  StatusOr<TrainResult> r = Train(*job, options);
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<LoadedModel> loaded = LoadExportedModel(r->export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  StatusOr<JobRecords> records = FindJobRecords(*job);
  ASSERT_TRUE(records.ok()) << records.status();
  const kernels::Context ctx = kernels::Context::Cpu(1);
  auto evaluate = [&](EvalInputCache* cache) {
    return Evaluate(ctx, loaded->layer, *loaded->model, records->eval, 16,
                    nullptr, cache);
  };
  StatusOr<EvalMetrics> plain = evaluate(nullptr);
  ASSERT_TRUE(plain.ok()) << plain.status();

  EvalInputCache cache;
  cache.budget_bytes = 64 << 20;
  EvalInputCache small;
  small.budget_bytes = 1000;
  for (EvalInputCache* c : {&cache, &small}) {
    StatusOr<EvalMetrics> first = evaluate(c);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->values, plain->values);
  }
  EXPECT_TRUE(cache.complete);
  EXPECT_GT(cache.batches.size(), 1u);
  EXPECT_GT(cache.bytes, 0);
  EXPECT_FALSE(small.complete);
  EXPECT_TRUE(small.over_budget);
  EXPECT_TRUE(small.batches.empty());

  // Without the files: the cache has all it needs; over its budget, the
  // evaluation reads them again.
  for (const std::string& f : records->eval) std::filesystem::remove(f);
  StatusOr<EvalMetrics> again = evaluate(&cache);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->values, plain->values);
  EXPECT_EQ(evaluate(&small).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dtf::runtime
