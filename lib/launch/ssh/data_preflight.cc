#include "lib/launch/ssh/data_preflight.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "lib/base/build_config.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/pack_job.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

// One line "<index> <readable shards> <unreadable shards>" per directory.
std::string ShardCountScript(const std::vector<std::string>& dirs) {
  std::string script;
  for (size_t i = 0; i < dirs.size(); ++i) {
    StrAppend(&script, "n=0; u=0; for f in ", ShellQuote(dirs[i]),
              "/part-*.tfrecord*; do case \"$f\" in *.index) continue;; "
              "esac; [ -f \"$f\" ] || continue; if [ -r \"$f\" ]; then "
              "n=$((n+1)); else u=$((u+1)); fi; done; echo ",
              i, " $n $u\n");
  }
  return script;
}

void CheckHost(const std::vector<pack::RecordDir>& dirs,
               const std::string& job_id, const std::string& job_entry,
               std::chrono::milliseconds timeout, RemoteHost* host,
               HostRow* row) {
  const std::string work =
      row->facts.work_dir.empty() ? host->work_dir() : row->facts.work_dir;
  std::vector<std::string> remote;
  for (const pack::RecordDir& d : dirs) {
    remote.push_back(RemoteRecordDir(d, work, job_id, job_entry));
  }
  StatusOr<ssh::ExecResult> r =
      host->session().Exec(ShardCountScript(remote), timeout);
  std::vector<std::string> missing;
  std::vector<bool> seen(remote.size(), false);
  if (r.ok() && r->exit_status == 0) {
    size_t start = 0;
    while (start < r->out.size()) {
      size_t end = r->out.find('\n', start);
      if (end == std::string::npos) end = r->out.size();
      const std::string line = r->out.substr(start, end - start);
      start = end + 1;
      size_t i = 0;
      unsigned long readable = 0, unreadable = 0;
      if (std::sscanf(line.c_str(), "%zu %lu %lu", &i, &readable,
                      &unreadable) != 3 ||
          i >= remote.size()) {
        continue;
      }
      seen[i] = true;
      if (readable == 0) {
        missing.push_back(
            unreadable == 0
                ? StrCat("no TFRecord shards (part-*.tfrecord*) in ", remote[i])
                : StrCat(unreadable, " shards in ", remote[i],
                         " but none readable by ", host->session().user()));
      }
    }
  }
  if (!r.ok() || r->exit_status != 0 ||
      std::find(seen.begin(), seen.end(), false) != seen.end()) {
    row->ok = false;
    row->data = "check failed";
    row->problem =
        StrCat("could not look for the job's records: ",
               r.ok() ? StrCat("the check exited ", r->exit_status, " ", r->err)
                      : std::string(Message(r.status())));
    row->fix = "the host must run a POSIX sh";
    return;
  }
  if (missing.empty()) {
    row->data = "ok";
    return;
  }
  row->ok = false;
  row->data = "missing";
  row->problem = missing.front();
  for (size_t i = 1; i < missing.size(); ++i) {
    StrAppend(&row->problem, "; ", missing[i]);
  }
  row->fix =
      "the profile does not ship the data: set with_data = true in it, or "
      "put the records on storage every host mounts at the same path and "
      "point [data] records there";
}

}  // namespace

StatusOr<pack::PackResult> PackJobArchive(const PlanRequest& request) {
  if (request.batch_command != nullptr) {
    pack::PackFilesOptions files;
    files.files = request.batch_files.shipped;
    files.entry = request.batch_files.entry;
    files.with_data = request.profile.with_data;
    files.dtf_version = kVersion;
    files.out_dir =
        !request.batch_files.pack_dir.empty()
            ? request.batch_files.pack_dir
            : (fs::path(request.job).parent_path() / ".dtf" / "pack").string();
    files.prefix = "batch-";
    return pack::PackFiles(files, request.job);
  }
  pack::PackJobOptions job;
  job.job = request.job;
  job.with_data = request.profile.with_data;
  job.dtf_version = kVersion;
  job.out_dir =
      (fs::path(request.job).parent_path() / ".dtf" / "pack").string();
  return pack::PackJob(job);
}

std::string RemoteRecordDir(const pack::RecordDir& dir,
                            const std::string& work_dir,
                            const std::string& job_id,
                            const std::string& job_entry) {
  if (!dir.relative) return dir.path;
  const fs::path job_dir =
      fs::path(StrCat(work_dir, "/jobs/", job_id, "/", job_entry))
          .parent_path();
  return (job_dir / dir.path).lexically_normal().string();
}

void CheckRecordsOnHosts(const std::vector<pack::RecordDir>& dirs,
                         const std::string& job_id,
                         const std::string& job_entry,
                         PreflightResult* result) {
  std::vector<std::thread> threads;
  for (size_t i = 0; i < result->rows.size(); ++i) {
    if (!result->rows[i].ok || result->hosts[i] == nullptr) continue;
    threads.emplace_back([&, i] {
      CheckHost(dirs, job_id, job_entry, result->probe_timeout,
                result->hosts[i].get(), &result->rows[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < result->rows.size(); ++i) {
    if (!result->rows[i].ok) result->hosts[i].reset();
  }
}

void CheckFilesOnHosts(const std::vector<std::string>& files,
                       PreflightResult* result) {
  // One line per file that is not a readable regular file.
  std::string script;
  for (const std::string& f : files) {
    StrAppend(&script, "[ -f ", ShellQuote(f), " ] && [ -r ", ShellQuote(f),
              " ] || printf '%s\\n' ", ShellQuote(f), "\n");
  }
  StrAppend(&script, "echo done\n");
  std::vector<std::thread> threads;
  for (size_t i = 0; i < result->rows.size(); ++i) {
    if (!result->rows[i].ok || result->hosts[i] == nullptr) continue;
    threads.emplace_back([&, i] {
      HostRow& row = result->rows[i];
      RemoteHost& host = *result->hosts[i];
      StatusOr<ssh::ExecResult> r =
          host.session().Exec(script, result->probe_timeout);
      if (!r.ok() || r->exit_status != 0 ||
          !(r->out.ends_with("done\n") &&
            (r->out.size() == 5 || r->out[r->out.size() - 6] == '\n'))) {
        row.ok = false;
        row.data = "check failed";
        row.problem = StrCat(
            "could not look for the input files: ",
            r.ok() ? StrCat("the check exited ", r->exit_status, " ", r->err)
                   : std::string(Message(r.status())));
        row.fix = "the host must run a POSIX sh";
        return;
      }
      const std::string missing = r->out.substr(0, r->out.size() - 5);
      if (missing.empty()) {
        row.data = "ok";
        return;
      }
      row.ok = false;
      row.data = "missing";
      std::string list;
      size_t start = 0;
      while (start < missing.size()) {
        const size_t end = missing.find('\n', start);
        StrAppend(&list, list.empty() ? "" : ", ",
                  missing.substr(start, end - start));
        start = end + 1;
      }
      row.problem = StrCat("no readable file at ", list, " there");
      row.fix =
          "the profile does not ship the data: set with_data = true in it, "
          "or put the files on storage every host mounts at the same path";
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < result->rows.size(); ++i) {
    if (!result->rows[i].ok) result->hosts[i].reset();
  }
}

Status CheckJobData(const Plan& plan, const pack::PackResult& job,
                    PreflightResult* result, const BatchFiles& batch) {
  if (plan.with_data) {
    for (HostRow& row : result->rows) {
      if (row.ok) row.data = "shipped";
    }
    return OkStatus();
  }
  if (plan.batch) {
    CheckFilesOnHosts(batch.on_hosts, result);
    return OkStatus();
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<pack::RecordDir> dirs,
                       pack::JobRecordDirs(plan.job, plan.sets));
  CheckRecordsOnHosts(dirs, job.archive.sha256.substr(0, 16),
                      job.manifest.entry, result);
  return OkStatus();
}

}  // namespace dtf::launch
