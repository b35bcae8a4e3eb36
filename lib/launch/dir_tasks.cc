#include "lib/launch/dir_tasks.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/process.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/task_files.h"

namespace dtf::launch {
namespace {

std::string HostOfAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

StatusOr<Plan> PlanInClaimedRunDir(
    PlanRequest request, const PlanHooks& hooks,
    const std::function<Status(PlanRequest*)>& before_claim) {
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(const Plan draft, MakePlanWith(request, hooks));
  if (before_claim) DTF_RETURN_IF_ERROR(before_claim(&request));
  const std::string runs_dir =
      std::filesystem::path(draft.run_dir).parent_path().string();
  DTF_ASSIGN_OR_RETURN(request.run_id,
                       ClaimRunDir(runs_dir, wanted_id, request.resume));
  return MakePlanWith(request, hooks);
}

std::string QuoteLastLines(const std::string& file, size_t n) {
  const std::vector<std::string> lines = LastLines(file, n);
  if (lines.empty()) return "";
  std::string out = StrCat("; the last lines of ", file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

void DirTasks::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  tasks_.assign(plan->tasks.size(), Task{});
  tails_ = OpenTaskTails(*plan);
}

void DirTasks::ClearEarlierEnds() const {
  for (const TaskPlan& t : plan_->tasks) {
    std::error_code ec;
    std::filesystem::remove(t.ready_file, ec);
    std::filesystem::remove(t.exit_file, ec);
    std::filesystem::remove(std::filesystem::path(t.dir) / kStartFile, ec);
  }
}

void DirTasks::PumpOutput(bool flush) {
  if (!events_->WantsOutput()) return;
  PollTaskTails(tails_, *events_, flush);
}

void DirTasks::CheckReady() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ready || t.ended) continue;
    std::optional<std::string> address =
        ReadReadyAddress(plan_->tasks[i].ready_file);
    if (!address) continue;
    t.ready = true;
    if (!plan_->batch) t.host = HostOfAddress(*address);
    events_->Ready(i, *address);
  }
}

void DirTasks::CheckExits(
    bool failures_first,
    const std::function<void(size_t i, const TaskEnd& end)>& before_end) {
  std::vector<std::pair<size_t, ExitRecord>> found;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].ended) continue;
    StatusOr<std::optional<ExitRecord>> rec =
        ReadExitRecord(plan_->tasks[i].exit_file);
    if (rec.ok() && *rec) found.emplace_back(i, **rec);
  }
  if (failures_first) {
    std::stable_partition(found.begin(), found.end(), [](const auto& f) {
      return f.second.state == TaskState::kFailed;
    });
  }
  for (auto& [i, e] : found) {
    Task& t = tasks_[i];
    const TaskPlan& plan = plan_->tasks[i];
    t.ended = true;
    if (t.host.empty()) {
      StatusOr<std::string> node =
          ReadFileToString(StrCat(plan.dir, "/", kNodeFile));
      if (node.ok()) t.host = std::string(absl::StripAsciiWhitespace(*node));
    }
    ExitInfo info;
    info.code = e.exit_code.value_or(-1);
    info.signal = e.signal;
    if (e.state == TaskState::kFailed && events_->EndsAreStops()) {
      e.state = TaskState::kStopped;
      (void)WriteExitRecord(plan.exit_file, e);
    }
    TaskEnd end;
    end.state = e.state;
    end.exit_code = info.ShellCode();
    end.signal = e.signal;
    end.how =
        e.state == TaskState::kReserved
            // A reserved worker slot that waited in its place until the
            // run ended (AwaitSlotStart).
            ? std::string("was never started (a reserved slot: dtf scale)")
            : StrCat(info.Describe(),
                     t.host.empty() ? std::string() : StrCat(" on ", t.host));
    end.how_brief = end.how;
    end.restart_how = end.how;
    events_->Note(StrCat(plan.name(), " ", end.how));
    if (before_end) before_end(i, end);
    events_->Ended(i, std::move(end));
  }
}

bool DirTasks::FailsGang(size_t i, const TaskEnd& end) const {
  const TaskPlan& plan = plan_->tasks[i];
  const size_t chief = static_cast<size_t>(plan_->ps);
  return !plan_->batch && end.state == TaskState::kFailed &&
         plan.role == Role::kWorker && !plan.chief && chief < tasks_.size() &&
         !tasks_[chief].ended;
}

std::vector<DirTasks::Missing> DirTasks::EndMissing() {
  std::vector<Missing> out;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ended) continue;
    const TaskPlan& plan = plan_->tasks[i];
    t.ended = true;
    ExitRecord e;
    e.task = plan.name();
    e.state = events_->EndsAreStops() ? TaskState::kStopped : TaskState::kLost;
    e.finished_ms = NowMs();
    Status s = WriteExitRecord(plan.exit_file, e);
    if (!s.ok()) events_->Note(StrCat("warning: ", Message(s)));
    out.push_back({i, e.state});
  }
  return out;
}

void DirTasks::AwaitEnds(std::chrono::milliseconds lag,
                         const std::function<void()>& check) const {
  const auto until = std::chrono::steady_clock::now() + lag;
  while (std::chrono::steady_clock::now() < until) {
    check();
    if (AllEnded()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool DirTasks::AllEnded() const {
  for (const Task& t : tasks_) {
    if (!t.ended) return false;
  }
  return true;
}

std::string DirTasks::StderrTail(size_t i, size_t lines,
                                 std::string_view when_empty) const {
  const TaskPlan& t = plan_->tasks[i];
  std::string out = QuoteLastLines(t.stderr_file, lines);
  if (!out.empty()) return out;
  return StrCat(" (its stderr, ", t.stderr_file, ", is empty)", when_empty);
}

}  // namespace dtf::launch
