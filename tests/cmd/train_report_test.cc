// The --metrics-out JSON: its evaluation metrics are the exported model's.
#include "cmd/train_report.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::cli {
namespace {

using ::testing::HasSubstr;

runtime::EvalReport Eval(int64_t step, double loss, double accuracy) {
  runtime::EvalReport e;
  e.step = step;
  e.split = "eval";
  e.metrics.examples = 100;
  e.metrics.values = {{"loss", loss}, {"accuracy", accuracy}};
  return e;
}

// Early stopping exported the step-120 model: the top-level metrics are
// its, the last evaluation's are under last_eval (a regression: they were
// the last evaluation's, while the model written was the best one).
TEST(MetricsJson, MetricsAreTheExportedBestModels) {
  runtime::TrainResult r;
  r.steps = 200;
  r.eval = Eval(200, 0.5, 0.80);
  r.best_eval = Eval(120, 0.25, 0.875);
  r.best_metric = "loss";
  r.best_checkpoint = "out/checkpoint-best.dtf";
  const std::string json = MetricsJson(r);
  EXPECT_THAT(json, HasSubstr("\"loss\":0.25,\"accuracy\":0.875,"));
  EXPECT_THAT(json, HasSubstr("\"last_eval\":{\"step\":200,\"loss\":0.5,"
                              "\"accuracy\":0.8}"));
  EXPECT_THAT(json, HasSubstr("\"best_step\":120"));
}

TEST(MetricsJson, WithoutABestEvaluationTheLastIsExported) {
  runtime::TrainResult r;
  r.eval = Eval(50, 0.5, 0.75);
  const std::string json = MetricsJson(r);
  EXPECT_THAT(json, HasSubstr("\"loss\":0.5,\"accuracy\":0.75,"));
  EXPECT_THAT(json, HasSubstr("\"last_eval\":{\"step\":50,"));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("best_step")));
}

}  // namespace
}  // namespace dtf::cli
