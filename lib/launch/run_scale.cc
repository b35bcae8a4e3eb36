#include "lib/launch/run_scale.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

std::string ScalePath(const std::string& run_dir) {
  return (fs::path(run_dir) / kScaleFile).string();
}

}  // namespace

Status WriteScaleRequest(const std::string& run_dir, int workers) {
  return WriteFileAtomically(
      ScalePath(run_dir), StrCat("{\n  \"workers\": ", workers,
                                 ",\n  \"requested_ms\": ", NowMs(), "\n}\n"));
}

StatusOr<std::optional<ScaleRequest>> ReadScaleRequest(
    const std::string& run_dir) {
  const std::string path = ScalePath(run_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<ScaleRequest>();
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("workers") ||
      !j["workers"].is_number_integer()) {
    return DataLossError(
        StrCat(path, ": not a scale request ({\"workers\": N})"));
  }
  ScaleRequest r;
  r.workers = j["workers"].get<int>();
  r.requested_ms = j.value("requested_ms", int64_t{0});
  return std::optional<ScaleRequest>(r);
}

int StartedWorkers(const Plan& plan, const RunRecord& record) {
  int started = 0;
  for (size_t i = 0; i < plan.tasks.size() && i < record.tasks.size(); ++i) {
    const TaskPlan& t = plan.tasks[i];
    if (t.role == Role::kWorker &&
        record.tasks[i].state != TaskState::kReserved) {
      started = std::max(started, t.index + 1);
    }
  }
  return started;
}

Status CheckScale(const Plan& plan, int started, int workers) {
  if (plan.launch_workers == 0) {
    return FailedPreconditionError(StrCat(
        "run ", plan.run_id, " has no worker slots to start: its profile (",
        plan.profile_source,
        ") sets no max_workers above workers, so it runs its ", plan.workers,
        " workers to the end"));
  }
  if (workers > plan.workers) {
    return InvalidArgumentError(StrCat(
        "--workers ", workers, ": run ", plan.run_id, " has ", plan.workers,
        " worker slots (max_workers = ", plan.workers, ")"));
  }
  if (workers < started) {
    return InvalidArgumentError(StrCat(
        "--workers ", workers, ": run ", plan.run_id, " has started ", started,
        " workers; dtf scale starts reserved slots, it does not stop workers "
        "(dtf stop ends the whole run)"));
  }
  return OkStatus();
}

}  // namespace dtf::launch
