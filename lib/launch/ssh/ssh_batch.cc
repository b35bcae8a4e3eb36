#include "lib/launch/ssh/ssh_batch.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/batch/shards.h"
#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/ssh/remote_host.h"
#include "lib/launch/ssh/ssh_backend.h"

namespace dtf::launch {
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
StatusOr<std::string> FetchFile(RemoteHost& host, const std::string& path) {
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

// The tasks read the shipped directory, and the inputs as shipped or found
// on their hosts; their shards are fetched from their task directories.
class SshPlacement : public ShardPlacement {
 public:
  explicit SshPlacement(bool with_data) : with_data_(with_data) {}

  Status Prepare(const BatchJob& job, const std::vector<std::string>& files,
                 PlanRequest* request) const override {
    DTF_ASSIGN_OR_RETURN(request->batch_files,
                         ShippedBatchFiles(job.dir, files, with_data_));
    std::error_code ec;
    request->batch_files.pack_dir =
        fs::absolute(".dtf/pack", ec).lexically_normal().string();
    // Chosen here, so that a run that fails to start is found again to
    // clean its hosts up.
    DTF_ASSIGN_OR_RETURN(request->run_id, NewRunId());
    return OkStatus();
  }

  ShardTaskFiles TaskFiles(const BatchJob& job,
                           const std::vector<std::string>& files,
                           const TaskPlan& task,
                           const std::string& job_dir) const override {
    return {job_dir, RemoteInputs(job_dir, files, with_data_),
            TaskDirShardPath(task, job.output, job.shards)};
  }

  Status Collect(const BatchJob& job, const Plan& plan, bool ok,
                 const BatchIo& io) const override {
    // Fetched only after a run that succeeded; removed there either way.
    return FetchRemoteShards(plan, job.output, job.shards, ok, io);
  }

  void CleanFailedStart(const BatchJob& job, const std::string& run_dir,
                        const BatchIo& io) const override {
    RemoveRemoteShardsOfFailedStart(run_dir, job.output, job.shards, io);
  }

 private:
  const bool with_data_;
};

}  // namespace

StatusOr<BatchFiles> ShippedBatchFiles(const std::string& dir,
                                       const std::vector<std::string>& files,
                                       bool with_data) {
  BatchFiles out;
  out.entry = kShippedDir;
  std::vector<std::string> dir_files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (; it != end; it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), dir);
    if (it->is_regular_file(ec)) dir_files.push_back(it->path().string());
  }
  if (ec) return ErrnoToStatus(ec.value(), dir);
  std::sort(dir_files.begin(), dir_files.end());
  for (const std::string& f : dir_files) {
    out.shipped.emplace_back(
        StrCat(kShippedDir, "/", fs::path(f).lexically_relative(dir).string()),
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

std::vector<std::string> RemoteInputs(const std::string& shipped_dir,
                                      const std::vector<std::string>& files,
                                      bool with_data) {
  if (!with_data) return files;
  const fs::path root = fs::path(shipped_dir).parent_path();
  std::vector<std::string> out;
  for (size_t i = 0; i < files.size(); ++i) {
    out.push_back((root / InputEntry(i, files[i])).string());
  }
  return out;
}

Status FetchRemoteShards(const Plan& plan, const std::string& output, int w,
                         bool fetch, const BatchIo& io) {
  // One session per host, opened on first use.
  std::map<std::string, StatusOr<std::unique_ptr<RemoteHost>>> hosts;
  Status first;
  for (const TaskPlan& task : plan.tasks) {
    auto found = hosts.find(task.host);
    if (found == hosts.end()) {
      found = hosts.emplace(task.host, ConnectTaskHost(plan, task)).first;
    }
    const std::string remote = TaskDirShardPath(task, output, w);
    if (!found->second.ok()) {
      const Status error = Annotate(
          found->second.status(),
          StrCat(task.name(), " on ", task.host, ": cannot reach the host"));
      if (fetch && first.ok()) first = error;
      io.warning(StrCat("dtf: warning: ", Message(error), "; ", remote,
                        " and its index are left there"));
      continue;
    }
    RemoteHost& host = **found->second;
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
    StatusOr<ssh::ExecResult> removed = host.session().Exec(
        StrCat("rm -f -- ", ShellQuote(remote), " ", ShellQuote(remote), ".* ",
               ShellQuote(task.dir), "/.",
               ShellQuote(fs::path(remote).filename().string()), ".*"),
        kRemoveTimeout);
    if (!removed.ok() || removed->exit_status != 0) {
      io.warning(StrCat(
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
                                     const BatchIo& io) {
  StatusOr<RunView> run = LoadRun(run_dir);
  if (!run.ok()) return;
  Plan started = run->plan;
  started.tasks.clear();
  for (size_t i = 0; i < run->plan.tasks.size() && i < run->record.tasks.size();
       ++i) {
    if (TaskStarted(*run, run->record.tasks[i])) {
      started.tasks.push_back(run->plan.tasks[i]);
    }
  }
  (void)FetchRemoteShards(started, output, w, /*fetch=*/false, io);
}

std::unique_ptr<BatchRunner> NewSshBatchRunner(Profile profile,
                                               RunStarter start) {
  const bool with_data = profile.with_data;
  return NewSupervisedBatchRunner(std::move(profile),
                                  std::make_unique<SshPlacement>(with_data),
                                  std::move(start));
}

}  // namespace dtf::launch
