#include "lib/runtime/worker_progress.h"

#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/runtime/coordinator_service.h"

namespace dtf::runtime {

WorkerProgress::WorkerProgress(const WorkerOptions& options, std::string self,
                               EventWriter* events)
    : options_(options), self_(std::move(self)), events_(events) {}

void WorkerProgress::AddStep(int64_t rows, float loss, Clock::duration time) {
  in_steps_ += time;
  window_time_ += time;
  examples_ += rows;
  window_loss_ += double(loss) * double(rows);
  epoch_loss_ += double(loss) * double(rows);
  window_rows_ += rows;
  epoch_rows_ += rows;
  ++window_steps_;
}

void WorkerProgress::Report(int64_t step, int64_t epoch) {
  if (window_steps_ == 0) return;
  TrainProgress p;
  p.step = step;
  p.epoch = epoch;
  p.examples = examples_;
  p.loss = window_loss_ / double(window_rows_);
  p.examples_per_sec = double(window_rows_) / Seconds(window_time_);
  p.elapsed_seconds = Seconds(Clock::now() - start_);
  loss_ = p.loss;
  if (options_.coordinator) {
    options_.coordinator->Update(self_, "running", step, p.loss,
                                 p.examples_per_sec);
    options_.coordinator->SetRunState("running", step);
  }
  if (options_.on_progress) options_.on_progress(p);
  if (events_ != nullptr) {
    Status st = events_->AddScalars(
        {{"loss", p.loss}, {"examples_per_sec", p.examples_per_sec}}, step);
    if (st.ok()) st = events_->Flush();
    if (!st.ok() && options_.on_note) {
      options_.on_note(StrCat("TensorBoard events: ", Message(st)));
    }
  }
  window_loss_ = 0;
  window_rows_ = window_steps_ = 0;
  window_time_ = {};
}

void WorkerProgress::EndEpoch() {
  if (epoch_rows_ > 0) loss_ = epoch_loss_ / double(epoch_rows_);
  epoch_loss_ = 0;
  epoch_rows_ = 0;
}

StatusOr<EvalReport> WorkerProgress::Evaluated(EvalMetrics metrics,
                                               int64_t step,
                                               std::string split) {
  if (options_.coordinator) {
    options_.coordinator->SetEvalMetrics(metrics.values);
  }
  if (events_ != nullptr) {
    std::vector<std::pair<std::string, double>> scalars;
    for (const auto& [name, value] : metrics.values) {
      scalars.emplace_back(StrCat("eval/", name), value);
    }
    DTF_RETURN_IF_ERROR(events_->AddScalars(scalars, step));
    DTF_RETURN_IF_ERROR(events_->Flush());
  }
  EvalReport report{step, std::move(metrics), std::move(split)};
  if (options_.on_eval) options_.on_eval(report);
  return report;
}

double WorkerProgress::examples_per_sec() const {
  const double seconds = train_seconds();
  return seconds > 0 ? double(examples_) / seconds : 0;
}

}  // namespace dtf::runtime
