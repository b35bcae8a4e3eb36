#include "cmd/remote_preflight.h"

#include <unistd.h>

#include <memory>

#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/job_records.h"

namespace dtf::cli {
namespace {

std::string ThisHost() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "this host";
  return name;
}

Status CheckShards(const std::string& dir, const std::string& job) {
  StatusOr<std::vector<std::string>> listed = runtime::ListShardsAnywhere(dir);
  // A refused listing names the bucket alone: say which prefix it was.
  if (!listed.ok()) return Annotate(listed.status(), StrCat("listing ", dir));
  const std::vector<std::string>& shards = *listed;
  if (shards.empty()) {
    return NotFoundError(StrCat("no TFRecord shards in ", dir,
                                "; write them with `dtf gen-records --job ",
                                job, "`"));
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                       OpenFileForRandomRead(shards.front()));
  char head[16];
  size_t got = 0;
  return file->Read(0, sizeof(head), head, &got);
}

}  // namespace

Status CheckRemoteData(const std::string& job_path,
                       const std::vector<std::string>& sets) {
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadJobFile(job_path, sets));
  const bool records = IsRemotePath(job.data.records_dir);
  const bool output = IsRemotePath(job.train.output_dir);
  if (!records && !output) return OkStatus();
  Status status = OkStatus();
  if (records) {
    StatusOr<runtime::JobRecords> found = runtime::FindJobRecords(job);
    status = found.status();
    // A refused listing names the bucket alone: say which prefix it was (a
    // prefix without shards is named already).
    if (!status.ok() && status.code() != StatusCode::kNotFound) {
      status = Annotate(status, StrCat("listing ", job.data.records_dir));
    }
    if (status.ok()) status = CheckShards(found->train_dir, job.path);
    if (status.ok() && !found->eval_dir.empty()) {
      status = CheckShards(found->eval_dir, job.path);
    }
  }
  if (status.ok() && output) {
    status = ListTree(job.train.output_dir).status();
    if (!status.ok()) {
      status =
          Annotate(status, StrCat("listing output_dir ", job.train.output_dir));
    }
  }
  if (status.ok()) return OkStatus();
  return Annotate(status, StrCat("preflight from ", ThisHost()));
}

}  // namespace dtf::cli
