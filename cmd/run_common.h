// What dtf launch, status, logs and stop share: finding a run's directory
// and prefixing task output ("[worker:1] ").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "lib/base/os.h"
#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"

namespace dtf::cli {

// --job and --runs-dir, which locate .dtf/runs/.
struct RunsFlags {
  std::string job = "dtf.toml";
  std::string runs_dir;
};
void AddRunsFlags(CLI::App* sub, RunsFlags* flags);
// --profile, --ps and --workers: the profile and the task counts that
// replace its own.
struct ProfileFlags {
  std::string profile = "local";
  int ps = 0;
  int workers = 0;
};
void AddProfileFlags(CLI::App* sub, ProfileFlags* flags);

// What dtf launch and dtf doctor start from: the job (loaded with the --set
// overrides `sets`, so that an invalid one stops here, and its device and
// mode read), the profile, this dtf as every task's binary, --runs-dir and
// the task counts.
StatusOr<launch::PlanRequest> PlanRequestFor(
    const RunsFlags& runs, const ProfileFlags& profile,
    const std::vector<std::string>& sets = {});

// What the launch library takes from this process's environment (only cmd/
// reads it): $HOME, which "~" stands for in a profile's paths.
launch::ProfileOptions ProfileOptionsFromEnv();
// $PATH, or "/usr/bin:/bin" when it is unset: where objcopy is looked for
// (launch::RunOptions::SshOptions::search_path, pack::CanStripDebug).
std::string SearchPathFromEnv();

// --runs-dir, or .dtf/runs beside the job file; absolute.
std::string RunsDirOf(const RunsFlags& flags);
// The directory of run `id` (a unique prefix will do; "" is the latest).
StatusOr<std::string> FindRun(const RunsFlags& flags, const std::string& id);

// `path` made absolute (against the working directory) and normal.
std::string AbsolutePath(const std::string& path);

// Whether `s` reads as a task name: "ps:N" or "worker:N".
bool IsTaskName(std::string_view s);

// Whether text written to `fd` may be coloured: a terminal, NO_COLOR unset
// or empty, TERM not "dumb".
bool ColorFor(int fd);

// "[worker:1] " padded to the longest task name, coloured per task when
// `color`.
class TaskPrefixes {
 public:
  TaskPrefixes(const std::vector<std::string>& tasks, bool color);
  std::string For(std::string_view task) const;

 private:
  std::vector<std::string> tasks_;
  size_t width_ = 0;
  bool color_ = false;
};

}  // namespace dtf::cli
