#include "cmd/predict_remote.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cmd/predict_shards.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/ssh/remote_host.h"
#include "lib/launch/ssh/ssh_backend.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kFetchChunk = size_t{4} << 20;
constexpr std::chrono::milliseconds kRemoveTimeout{60000};

// "inputs/000003-<name>": position first, so the names sort as `files`.
std::string InputEntry(size_t position, const std::string& file) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "inputs/%06zu-", position);
  return StrCat(prefix, fs::path(file).filename().string());
}

// The whole of `path` on `host`; NotFound when it is not there.
StatusOr<std::string> FetchFile(launch::RemoteHost& host,
                                const std::string& path) {
  std::string data;
  while (true) {
    DTF_ASSIGN_OR_RETURN(std::optional<std::string> chunk,
                         host.ReadAt(path, data.size(), kFetchChunk));
    if (!chunk.has_value()) {
      return NotFoundError(StrCat(path, ": no such file"));
    }
    if (chunk->empty()) return data;
    data += *chunk;
  }
}

}  // namespace

StatusOr<launch::BatchFiles> PredictBatchFiles(
    const std::string& model, const std::vector<std::string>& files,
    bool with_data) {
  launch::BatchFiles out;
  out.entry = kShippedModel;
  std::vector<std::string> model_files;
  std::error_code ec;
  fs::recursive_directory_iterator it(model, ec), end;
  if (ec) return ErrnoToStatus(ec.value(), model);
  for (; it != end; it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), model);
    if (it->is_regular_file(ec)) model_files.push_back(it->path().string());
  }
  if (ec) return ErrnoToStatus(ec.value(), model);
  std::sort(model_files.begin(), model_files.end());
  for (const std::string& f : model_files) {
    out.shipped.emplace_back(
        StrCat(kShippedModel, "/",
               fs::path(f).lexically_relative(model).string()),
        f);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (with_data) {
      out.shipped.emplace_back(InputEntry(i, files[i]), files[i]);
    } else {
      out.on_hosts.push_back(files[i]);
    }
  }
  return out;
}

std::vector<std::string> RemoteInputs(const std::string& shipped_model,
                                      const std::vector<std::string>& files,
                                      bool with_data) {
  if (!with_data) return files;
  const fs::path root = fs::path(shipped_model).parent_path();
  std::vector<std::string> out;
  for (size_t i = 0; i < files.size(); ++i) {
    out.push_back((root / InputEntry(i, files[i])).string());
  }
  return out;
}

std::string RemoteShardPath(const launch::TaskPlan& task,
                            const std::string& output, int w) {
  return StrCat(
      task.dir, "/",
      fs::path(ShardOutputPath(output, task.index, w)).filename().string());
}

Status FetchRemoteShards(const launch::Plan& plan, const std::string& output,
                         int w, bool fetch, const Console& console) {
  // One session per host, opened on first use.
  std::map<std::string, StatusOr<std::unique_ptr<launch::RemoteHost>>> hosts;
  Status first;
  for (const launch::TaskPlan& task : plan.tasks) {
    auto found = hosts.find(task.host);
    if (found == hosts.end()) {
      found =
          hosts.emplace(task.host, launch::ConnectTaskHost(plan, task)).first;
    }
    const std::string remote = RemoteShardPath(task, output, w);
    if (!found->second.ok()) {
      const Status error = Annotate(
          found->second.status(),
          StrCat(task.name(), " on ", task.host, ": cannot reach the host"));
      if (fetch && first.ok()) first = error;
      console.Warning(StrCat("dtf: warning: ", Message(error), "; ", remote,
                             " and its index are left there"));
      continue;
    }
    launch::RemoteHost& host = **found->second;
    if (fetch && first.ok()) {
      const std::string local = ShardOutputPath(output, task.index, w);
      for (const auto& [from, to] :
           {std::pair{remote, local},
            std::pair{ShardIndexPath(remote), ShardIndexPath(local)}}) {
        StatusOr<std::string> data = FetchFile(host, from);
        Status written =
            data.ok() ? WriteFileAtomically(to, *data) : data.status();
        if (!written.ok()) {
          first = Annotate(written, StrCat(task.name(), " on ", task.host,
                                           ": fetching its shard"));
          break;
        }
      }
    }
    // The shard, its index and their temporary files.
    StatusOr<launch::ssh::ExecResult> removed = host.session().Exec(
        StrCat("rm -f -- ", ShellQuote(remote), " ", ShellQuote(remote), ".* ",
               ShellQuote(task.dir), "/.",
               ShellQuote(fs::path(remote).filename().string()), ".*"),
        kRemoveTimeout);
    if (!removed.ok() || removed->exit_status != 0) {
      console.Warning(StrCat(
          "dtf: warning: ", task.name(), " on ", task.host,
          ": could not remove ", remote, ": ",
          removed.ok()
              ? StrCat("rm exited ", removed->exit_status, " ", removed->err)
              : std::string(Message(removed.status()))));
    }
  }
  return first;
}

void RemoveRemoteShardsOfFailedStart(const std::string& run_dir,
                                     const std::string& output, int w,
                                     const Console& console) {
  StatusOr<launch::RunView> run = launch::LoadRun(run_dir);
  if (!run.ok()) return;
  launch::Plan started = run->plan;
  started.tasks.clear();
  for (size_t i = 0; i < run->plan.tasks.size() && i < run->record.tasks.size();
       ++i) {
    if (launch::TaskStarted(*run, run->record.tasks[i])) {
      started.tasks.push_back(run->plan.tasks[i]);
    }
  }
  (void)FetchRemoteShards(started, output, w, /*fetch=*/false, console);
}

}  // namespace dtf::cli
