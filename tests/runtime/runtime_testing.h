// Test helpers for lib/runtime: the example jobs (examples/<name>/dtf.toml)
// copied into a temporary directory with the sample data's real paths, and
// their TFRecord shards written there; loopback ports held for servers.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "gtest/gtest.h"
#include "lib/base/status.h"
#include "lib/base/strings.h"
#include "lib/data/gen_records.h"
#include "lib/data/job_file.h"
#include "lib/launch/ports.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime::testing {

// examples/<name>/dtf.toml with `edits` applied (each a {from, to} text
// replacement that must match), written to dir/dtf.toml.
inline StatusOr<std::string> WriteExampleJob(
    std::string_view name, const dtf::testing::TempDir& dir,
    std::initializer_list<std::pair<std::string_view, std::string_view>> edits =
        {}) {
  std::string text = dtf::testing::ReadFile(
      StrCat(DTF_SOURCE_DIR, "/examples/", name, "/dtf.toml"));
  if (text.empty()) return NotFoundError(StrCat("no example job ", name));
  auto replace = [&](std::string_view from, std::string_view to) -> Status {
    size_t at = text.find(from);
    if (at == std::string::npos) {
      return NotFoundError(
          StrCat("example job ", name, " has no \"", from, "\""));
    }
    while (at != std::string::npos) {
      text.replace(at, from.size(), to);
      at = text.find(from, at + to.size());
    }
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(replace("../../../shared", DTF_SHARED_DIR));
  for (const auto& [from, to] : edits) DTF_RETURN_IF_ERROR(replace(from, to));
  const std::string path = dir.Join("dtf.toml");
  dtf::testing::WriteFile(path, text);
  return path;
}

// Loads the job at `path` and writes its shards, as `dtf gen-records --job`.
inline StatusOr<JobFile> LoadJobWithRecords(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(path));
  for (GenRecordsOptions& options : GenRecordsOptionsFromJob(job)) {
    options.threads = 2;
    options.overwrite = true;
    DTF_RETURN_IF_ERROR(GenRecords(options).status());
  }
  return job;
}

// A loopback port held from construction to destruction (launch::HoldPort):
// chosen for a task before the task starts, with no window in which it is
// free, while the task's gRPC server (which binds with SO_REUSEPORT, as
// Serve does) can still bind it. port() is 0 when none could be held.
// Move-only.
class HeldPort {
 public:
  HeldPort() {
    StatusOr<launch::HeldPort> held = launch::HoldPort("127.0.0.1", 0);
    if (held.ok()) held_ = std::move(*held);
  }

  int port() const { return held_.port(); }
  std::string address() const { return StrCat("127.0.0.1:", port()); }

 private:
  launch::HeldPort held_;
};

}  // namespace dtf::runtime::testing
