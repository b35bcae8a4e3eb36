// How training reports itself on the terminal and in --metrics-out JSON,
// shared by `dtf train` and `dtf serve`.
#pragma once

#include <string>

#include "lib/runtime/train/trainer.h"

namespace dtf::cli {

// "loss 0.3094  accuracy 0.8562  auc 0.9111"
std::string FormatMetrics(const runtime::EvalMetrics& m);
// "step     100  epoch   0  loss 0.3824     114712 examples/s"
std::string ProgressLine(const runtime::TrainProgress& p);
// "eval  step 128  (eval, 16281 examples)  loss ..."
std::string EvalLine(const runtime::EvalReport& e);
// "best: eval loss 0.9012 at step 120 (checkpoint-best.dtf, exported);
// early stopping ended training at step 200"; empty without a best
// evaluation.
std::string BestLine(const runtime::TrainResult& r);
// The --metrics-out object (docs/training.md), with a trailing newline.
std::string MetricsJson(const runtime::TrainResult& r);

}  // namespace dtf::cli
