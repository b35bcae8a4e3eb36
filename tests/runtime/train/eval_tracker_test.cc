#include "lib/runtime/train/eval_tracker.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/train/best_eval.h"

namespace dtf::runtime {
namespace {

EvalReport Report(int64_t step, double loss, double accuracy = 0.8,
                  double auc = 0.9) {
  EvalReport r;
  r.step = step;
  r.split = "eval";
  r.metrics.examples = 100;
  r.metrics.values = {{"loss", loss}, {"accuracy", accuracy}, {"auc", auc}};
  return r;
}

TrainSpec WithEarlyStopping(std::string metric, int64_t patience,
                            double min_delta) {
  TrainSpec t;
  t.early_stopping = EarlyStoppingSpec{std::move(metric), patience, min_delta};
  return t;
}

TEST(EvalTracker, WithoutEarlyStoppingTracksTheLowestLossAndNeverStops) {
  EvalTracker tracker{TrainSpec()};
  EXPECT_EQ(tracker.metric(), "loss");
  EXPECT_FALSE(tracker.best().has_value());
  EXPECT_TRUE(tracker.Observe(Report(10, 0.9)).improved);
  EXPECT_TRUE(tracker.Observe(Report(20, 0.8)).improved);
  for (int64_t step = 30; step <= 100; step += 10) {
    const EvalVerdict v = tracker.Observe(Report(step, 0.8 + step / 1000.0));
    EXPECT_FALSE(v.improved);
    EXPECT_FALSE(v.stop);
  }
  ASSERT_TRUE(tracker.best().has_value());
  EXPECT_EQ(tracker.best()->step, 20);
  EXPECT_FALSE(tracker.last_was_best());
  EXPECT_FALSE(tracker.stopped());
}

TEST(EvalTracker, StopsAfterPatienceEvaluationsWithoutImprovement) {
  EvalTracker tracker(WithEarlyStopping("loss", 2, 0.0));
  EXPECT_TRUE(tracker.Observe(Report(1, 0.90)).improved);
  EXPECT_TRUE(tracker.Observe(Report(2, 0.85)).improved);
  EXPECT_TRUE(tracker.last_was_best());
  EvalVerdict v = tracker.Observe(Report(3, 0.95));
  EXPECT_FALSE(v.improved);
  EXPECT_FALSE(v.stop);
  // An improvement resets the count.
  EXPECT_TRUE(tracker.Observe(Report(4, 0.80)).improved);
  EXPECT_FALSE(tracker.Observe(Report(5, 0.80)).stop);  // equal: no better
  v = tracker.Observe(Report(6, 1.30));
  EXPECT_TRUE(v.stop);
  EXPECT_TRUE(tracker.stopped());
  EXPECT_EQ(tracker.best()->step, 4);
  EXPECT_EQ(tracker.StopNote(6),
            "early stopping: eval loss has not improved for 2 evaluations "
            "(best 0.8000 at step 4); stopping at step 6");
}

TEST(EvalTracker, MinDeltaAndHigherIsBetter) {
  EvalTracker tracker(WithEarlyStopping("auc", 1, 0.01));
  EXPECT_TRUE(tracker.Observe(Report(1, 0.5, 0.8, 0.70)).improved);
  // Up by less than min_delta: not an improvement; patience 1 stops.
  const EvalVerdict v = tracker.Observe(Report(2, 0.4, 0.8, 0.705));
  EXPECT_FALSE(v.improved);
  EXPECT_TRUE(v.stop);
  EvalTracker up(WithEarlyStopping("auc", 1, 0.01));
  EXPECT_TRUE(up.Observe(Report(1, 0.5, 0.8, 0.70)).improved);
  EXPECT_TRUE(up.Observe(Report(2, 0.9, 0.8, 0.72)).improved);
  EXPECT_EQ(up.best()->step, 2);
}

TEST(EvalTracker, ANaNMetricNeverImproves) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EvalTracker tracker(WithEarlyStopping("auc", 2, 0.0));
  EXPECT_FALSE(tracker.Observe(Report(1, 0.5, 0.8, nan)).improved);
  EXPECT_FALSE(tracker.best().has_value());
  EXPECT_TRUE(tracker.Observe(Report(2, 0.5, 0.8, 0.6)).improved);
  EXPECT_FALSE(tracker.Observe(Report(3, 0.5, 0.8, nan)).improved);
  EXPECT_EQ(tracker.best()->step, 2);
}

TEST(EvalTracker, WarnsOnceWhenAccuracyIsTheMajorityRate) {
  EvalTracker tracker{TrainSpec()};
  EvalReport r = Report(1, 0.05, 0.990);
  r.metrics.positive_rate = 0.01;
  EXPECT_EQ(tracker.Observe(r).warning,
            "accuracy 0.990 equals the majority-class rate 0.990 (1.0% "
            "positives in the eval split): the model may predict one class; "
            "see precision, recall and pr_auc");
  EXPECT_EQ(tracker.Observe(r).warning, "");  // once per run

  // 0.4 points above the majority rate: still warned; 0.6 points: not.
  EvalTracker close{TrainSpec()};
  r.metrics.values[1].second = 0.994;
  EXPECT_NE(close.Observe(r).warning, "");
  EvalTracker clear{TrainSpec()};
  r.metrics.values[1].second = 0.996;
  EXPECT_EQ(clear.Observe(r).warning, "");
  // Below the majority rate.
  EvalTracker below{TrainSpec()};
  r.metrics.values[1].second = 0.95;
  r.metrics.positive_rate = 0.02;
  EXPECT_EQ(below.Observe(r).warning.substr(0, 55),
            "accuracy 0.950 is below the majority-class rate 0.980 (");
  // No class balance (not a binary model): no warning.
  EvalTracker other{TrainSpec()};
  r.metrics.positive_rate.reset();
  EXPECT_EQ(other.Observe(r).warning, "");
}

// A resumed run's best so far is the one to beat.
TEST(EvalTracker, ARestoredBestIsTheOneToBeat) {
  EvalTracker tracker{TrainSpec()};
  tracker.Restore(Report(40, 0.5));
  ASSERT_TRUE(tracker.best().has_value());
  EXPECT_EQ(tracker.best()->step, 40);
  EXPECT_FALSE(tracker.last_was_best());
  EXPECT_FALSE(tracker.Observe(Report(50, 0.6)).improved);
  EXPECT_EQ(tracker.best()->step, 40);
  EXPECT_TRUE(tracker.Observe(Report(60, 0.4)).improved);
  EXPECT_EQ(tracker.best()->step, 60);
  // One without a finite value of the metric is not taken.
  EvalTracker other{TrainSpec()};
  other.Restore(Report(40, std::nan("")));
  EXPECT_FALSE(other.best().has_value());
}

TEST(BestEval, RoundTripsThroughACheckpoint) {
  Bundle bundle;
  EXPECT_FALSE(ReadBestEval(bundle)->has_value());
  EvalReport r = Report(120, 0.123456789012345678, 0.875, 0.91);
  r.metrics.positive_rate = 0.383;
  AddBestEval(r, &bundle);
  StatusOr<Bundle> back = Bundle::Parse(bundle.Serialize(), "best.dtf");
  ASSERT_TRUE(back.ok()) << back.status();
  StatusOr<std::optional<EvalReport>> read = ReadBestEval(*back);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  const EvalReport& e = **read;
  EXPECT_EQ(e.step, 120);
  EXPECT_EQ(e.split, "eval");
  EXPECT_EQ(e.metrics.examples, 100);
  EXPECT_EQ(e.metrics.positive_rate, 0.383);
  EXPECT_EQ(e.metrics.values, r.metrics.values);

  Bundle bad;
  bad.AddString(std::string(kBestEvalEntry), "step=1\nloss\n");
  StatusOr<Bundle> parsed = Bundle::Parse(bad.Serialize(), "bad.dtf");
  ASSERT_TRUE(parsed.ok());
  StatusOr<std::optional<EvalReport>> refused = ReadBestEval(*parsed);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(std::string(Message(refused.status())).find("bad.dtf"),
            std::string::npos);
}

}  // namespace
}  // namespace dtf::runtime
