#include "lib/runtime/train/progress.h"

#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/cluster/task_state.h"

namespace dtf::runtime {

Progress::Progress(const TrainHooks& hooks, CoordinatorService* coordinator,
                   std::string self, EventWriter* events)
    : hooks_(hooks),
      coordinator_(coordinator),
      self_(std::move(self)),
      events_(events) {}

void Progress::AddStep(int64_t rows, float loss, Clock::duration time) {
  in_steps_ += time;
  window_time_ += time;
  examples_ += rows;
  window_loss_ += double(loss) * double(rows);
  epoch_loss_ += double(loss) * double(rows);
  window_rows_ += rows;
  epoch_rows_ += rows;
  ++window_steps_;
}

void Progress::Report(int64_t step, int64_t epoch) {
  if (window_steps_ == 0) return;
  TrainProgress p;
  p.step = step;
  p.epoch = epoch;
  p.examples = examples_;
  p.loss = window_loss_ / double(window_rows_);
  p.examples_per_sec = double(window_rows_) / Seconds(window_time_);
  p.elapsed_seconds = Seconds(Clock::now() - start_);
  loss_ = p.loss;
  reported_loss_ = p.loss;
  if (coordinator_) {
    coordinator_->Update(self_, TaskState::kRunning, step, p.loss,
                         p.examples_per_sec);
    coordinator_->SetRunState(RunState::kRunning, step);
  }
  if (hooks_.on_progress) hooks_.on_progress(p);
  if (events_ != nullptr) {
    Status st = events_->AddScalars(
        {{"loss", p.loss}, {"examples_per_sec", p.examples_per_sec}}, step);
    if (st.ok()) st = events_->Flush();
    if (!st.ok()) hooks_.Note(StrCat("TensorBoard events: ", Message(st)));
  }
  window_loss_ = 0;
  window_rows_ = window_steps_ = 0;
  window_time_ = {};
}

void Progress::EndEpoch() {
  if (epoch_rows_ > 0) {
    loss_ = epoch_loss_ / double(epoch_rows_);
    last_epoch_loss_ = loss_;
  }
  epoch_loss_ = 0;
  epoch_rows_ = 0;
}

StatusOr<EvalReport> Progress::Evaluated(EvalMetrics metrics, int64_t step,
                                         std::string split) {
  if (coordinator_) {
    coordinator_->SetEvalMetrics(metrics.values);
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
  if (hooks_.on_eval) hooks_.on_eval(report);
  return report;
}

double Progress::epoch_loss() const {
  if (last_epoch_loss_ != 0) return last_epoch_loss_;
  if (epoch_rows_ > 0 && epoch_loss_ != 0) {
    return epoch_loss_ / double(epoch_rows_);
  }
  return reported_loss_;
}

double Progress::examples_per_sec() const {
  const double seconds = train_seconds();
  return seconds > 0 ? double(examples_) / seconds : 0;
}

}  // namespace dtf::runtime
