#include "lib/launch/k8s/k8s_resume.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"

namespace dtf::launch::k8s {
namespace {

namespace fs = std::filesystem;

// Whether `item` has a condition of one of `types` with status "True".
bool HasCondition(const nlohmann::json& item,
                  std::initializer_list<std::string_view> types) {
  const auto status = item.find("status");
  if (status == item.end() || !status->is_object()) return false;
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return false;
  for (const nlohmann::json& c : *conditions) {
    if (!c.is_object() || c.value("status", "") != "True") continue;
    const std::string type = c.value("type", "");
    for (std::string_view t : types) {
      if (type == t) return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<WorkloadState> WorkloadStateOf(std::string_view json) {
  const nlohmann::json j =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("items") || !j["items"].is_array()) {
    return DataLossError(
        "kubectl get --output=json: not a List (no \"items\" array)");
  }
  if (j["items"].empty()) return WorkloadState::kGone;
  bool failed = false;
  bool succeeded = true;
  for (const nlohmann::json& item : j["items"]) {
    if (!item.is_object()) {
      return DataLossError("kubectl get --output=json: an item not an object");
    }
    failed = failed || HasCondition(item, {"Failed", "FailureTarget"});
    succeeded =
        succeeded &&
        HasCondition(item, {"Complete", "SuccessCriteriaMet", "Succeeded"});
  }
  if (failed) return WorkloadState::kFailed;
  return succeeded ? WorkloadState::kSucceeded : WorkloadState::kActive;
}

StatusOr<std::string> ResumeKubernetesRun(const std::string& run_dir,
                                          const HandOffOptions& how) {
  std::string id;
  RunRecordFacts facts;
  DTF_ASSIGN_OR_RETURN(const KubernetesProfile p,
                       ReadRunRecord(run_dir, &id, &facts));
  if (facts.training == false) {
    return FailedPreconditionError(
        StrCat("run ", id, " (", run_dir,
               ") is a scoring run (dtf predict): there is no checkpoint to "
               "resume; score again instead"));
  }
  if (facts.output_kept == false) {
    return FailedPreconditionError(StrCat(
        "run ", id,
        ": its pods wrote train.output_dir where nothing "
        "outlives them (not on kubernetes.output), so its checkpoints were "
        "lost with them and there is nothing to resume; start a new run "
        "with kubernetes.output set"));
  }
  const std::string objects = StrCat(run_dir, "/kubernetes");
  std::error_code ec;
  if (!fs::is_directory(objects, ec)) {
    return FailedPreconditionError(
        StrCat("run ", id, ": no recorded objects (", objects,
               " is missing), so they cannot be applied again"));
  }
  const std::vector<std::string> remove = DeleteCommand(p, id);
  const std::vector<std::string> apply = ApplyCommand(p, objects);
  if (how.dry_run) {
    return StrCat(ShellJoin(WorkloadCommand(p, id)), "\n", ShellJoin(remove),
                  "\n", ShellJoin(apply), "\n");
  }
  DTF_RETURN_IF_ERROR(CheckCluster(p));
  const std::vector<std::string> get = WorkloadCommand(p, id);
  const CommandResult got = RunCommand(get, /*stderr_apart=*/true);
  if (got.exit_code != 0) {
    return UnavailableError(
        StrCat("run ", id, ": ", ShellJoin(get), " exited ", got.exit_code,
               ": ", got.errors.empty() ? got.output : got.errors));
  }
  DTF_ASSIGN_OR_RETURN(const WorkloadState state, WorkloadStateOf(got.output));
  switch (state) {
    case WorkloadState::kSucceeded:
      return FailedPreconditionError(StrCat(
          "run ", id, " finished (succeeded); there is nothing to resume"));
    case WorkloadState::kActive:
      return FailedPreconditionError(StrCat(
          "run ", id,
          " is still going (its Job is neither complete nor failed; the Job "
          "replaces its failed pods as max_restarts allows); stop it first "
          "(dtf stop ",
          id, ") to resume it from its last checkpoint"));
    case WorkloadState::kFailed:
    case WorkloadState::kGone:
      break;
  }
  // What is left of the failed run (its Job keeps its name) goes first.
  const CommandResult deleted = RunCommand(remove);
  if (deleted.exit_code != 0) {
    return FailedPreconditionError(StrCat("kubernetes: ", ShellJoin(remove),
                                          " failed:\n", deleted.output));
  }
  const CommandResult applied = RunCommand(apply);
  if (applied.exit_code != 0) {
    return FailedPreconditionError(
        StrCat("kubernetes: ", ShellJoin(apply), " failed:\n", applied.output));
  }
  how.on_info(
      StrCat(applied.output, "dtf: run ", id,
             " resumed: its objects applied again from ", objects,
             "; each pod's dtf serve --restore goes on from the run's last "
             "checkpoint on kubernetes.output; follow it with\n  ",
             ShellJoin(StatusCommand(p, id)),
             "\n(dtf status, dtf logs and dtf stop ", id, " run them)"));
  return StrCat(id, "\n");
}

}  // namespace dtf::launch::k8s
