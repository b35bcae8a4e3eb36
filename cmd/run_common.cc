#include "cmd/run_common.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/strings/str_join.h"
#include "cmd/flags.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"

namespace dtf::cli {

namespace fs = std::filesystem;

void AddRunsFlags(CLI::App* sub, RunsFlags* flags) {
  sub->add_option("--job", flags->job,
                  "The job file; runs are recorded in .dtf/runs beside it "
                  "(default: dtf.toml)");
  sub->add_option("--runs-dir", flags->runs_dir,
                  "Where runs are recorded (default: .dtf/runs beside the "
                  "job file)");
}

void AddProfileFlags(CLI::App* sub, ProfileFlags* flags) {
  sub->add_option("--profile", flags->profile,
                  "profiles/<NAME>.toml beside the job file, or a path to a "
                  ".toml file (default: local; built in when the job has "
                  "none)");
  sub->add_option("--ps", flags->ps,
                  "Parameter servers (default: the profile's)")
      ->check(IntBetween(1, 1000));
  sub->add_option("--workers", flags->workers,
                  "Workers (default: the profile's)")
      ->check(IntBetween(1, 10000));
}

namespace {

// Why the job does not load with `sets`, naming them. A set key has no
// place in the job file, so the position the job file reader gives it
// ("dtf.toml:1:1: train.epoch: ...") is left out.
Status SetError(const std::string& job, const std::vector<std::string>& sets,
                const Status& why) {
  std::string message(Message(why));
  const std::string nowhere = StrCat(job, ":1:1: ");
  if (message.rfind(nowhere, 0) == 0) {
    const std::string rest = message.substr(nowhere.size());
    for (const std::string& set : sets) {
      const std::string key = set.substr(0, set.find('='));
      const std::string table = key.substr(0, key.find('.'));
      if (rest.rfind(key + ":", 0) == 0 || rest.rfind(table + ":", 0) == 0) {
        message = rest;
        break;
      }
    }
  }
  return InvalidArgumentError(
      StrCat("--set ", absl::StrJoin(sets, " --set "), ": ", message));
}

}  // namespace

StatusOr<launch::PlanRequest> PlanRequestFor(
    const RunsFlags& runs, const ProfileFlags& profile,
    const std::vector<std::string>& sets) {
  launch::PlanRequest r;
  r.job = AbsolutePath(runs.job);
  // The job as the tasks will read it, --set applied: a set that names no
  // key of the job file, or gives a key a value it cannot take, stops the
  // plan here (a dry run included) rather than every task it would start.
  for (const std::string& set : sets) {
    DTF_RETURN_IF_ERROR(launch::ValidateSet(set));
  }
  DTF_ASSIGN_OR_RETURN(const JobFile as_written, LoadJobFile(r.job));
  JobFile job = as_written;
  if (!sets.empty()) {
    StatusOr<JobFile> with_sets = LoadJobFile(r.job, sets);
    if (!with_sets.ok()) return SetError(r.job, sets, with_sets.status());
    job = *std::move(with_sets);
  }
  r.job_device = job.train.device;
  r.allreduce = job.train.mode == TrainMode::kAllreduce;
  r.job_checkpoint_every_steps = job.train.checkpoint_every_steps;
  r.overrides.sets = sets;
  DTF_ASSIGN_OR_RETURN(
      r.profile,
      launch::ResolveProfile(fs::path(r.job).parent_path().string(),
                             profile.profile, ProfileOptionsFromEnv()));
  DTF_ASSIGN_OR_RETURN(r.binary, SelfExecutable());
  if (!runs.runs_dir.empty()) r.runs_dir = AbsolutePath(runs.runs_dir);
  r.overrides.ps = profile.ps;
  r.overrides.workers = profile.workers;
  return r;
}

launch::ProfileOptions ProfileOptionsFromEnv() {
  launch::ProfileOptions options;
  if (const char* home = std::getenv("HOME")) options.home_dir = home;
  return options;
}

std::string SearchPathFromEnv() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : "/usr/bin:/bin";
}

std::string RunsDirOf(const RunsFlags& flags) {
  std::error_code ec;
  if (!flags.runs_dir.empty()) {
    return fs::absolute(flags.runs_dir, ec).lexically_normal().string();
  }
  const fs::path job = fs::absolute(flags.job, ec).lexically_normal();
  return launch::DefaultRunsDir(job.parent_path().string());
}

StatusOr<std::string> FindRun(const RunsFlags& flags, const std::string& id) {
  return launch::FindRunDir(RunsDirOf(flags), id);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal().string();
}

bool IsTaskName(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view role = s.substr(0, colon);
  const std::string_view index = s.substr(colon + 1);
  if (role != "ps" && role != "worker") return false;
  return !index.empty() && std::all_of(index.begin(), index.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
}

bool ColorFor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(fd) == 1 && !(no_color && *no_color) &&
         !(term && std::string_view(term) == "dumb");
}

TaskPrefixes::TaskPrefixes(const std::vector<std::string>& tasks, bool color)
    : tasks_(tasks), color_(color) {
  for (const std::string& t : tasks_) width_ = std::max(width_, t.size());
}

std::string TaskPrefixes::For(std::string_view task) const {
  // Colours that read on dark and light terminals alike.
  static constexpr const char* kColors[] = {"36", "35", "33", "32", "34", "31",
                                            "96", "95", "93", "92", "94"};
  const std::string label = StrCat("[", task, "]");
  std::string padding(width_ + 2 > label.size() ? width_ + 2 - label.size() : 0,
                      ' ');
  if (!color_) return StrCat(label, padding, " ");
  const size_t index = static_cast<size_t>(
      std::find(tasks_.begin(), tasks_.end(), task) - tasks_.begin());
  return StrCat("\033[", kColors[index % std::size(kColors)], "m", label,
                "\033[0m", padding, " ");
}

}  // namespace dtf::cli
