// StagedRecords' runs whose output directory is in an object store: staged
// under a local directory, uploaded by Commit.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "lib/base/strings.h"
#include "lib/data/gen_records.h"
#include "lib/data/shard_set.h"

namespace dtf {

StagedRecords::StagedRecords() = default;

StagedRecords::~StagedRecords() {
  // Last staged first: a later run's output directory may sit inside one an
  // earlier run created.
  while (!runs_.empty()) runs_.pop_back();
}

struct StagedRecords::RemoteRun {
  LocalStagingDir local;
  std::string remote_dir;
  std::vector<std::string> splits;
};

namespace {

// The shards below remote `dir` for each split ("" for none).
StatusOr<std::vector<std::string>> RemoteShards(
    const std::string& dir, const std::vector<std::string>& splits) {
  std::vector<std::string> found;
  for (const std::string& split : splits) {
    const std::string sub = split.empty() ? dir : JoinPath(dir, split);
    DTF_ASSIGN_OR_RETURN(std::vector<FileInfo> files,
                         ListFiles(JoinPath(sub, "part-*.tfrecord*")));
    for (const FileInfo& f : files) found.push_back(f.path);
  }
  return found;
}

}  // namespace

Status StagedRecords::CommitRemote(RemoteRun* run) {
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> old,
                       RemoteShards(run->remote_dir, run->splits));
  // Index files after their shards: a reader never finds an index whose
  // shard is missing.
  DTF_ASSIGN_OR_RETURN(
      std::vector<std::string> written,
      UploadTree(run->local.path(), run->remote_dir,
                 [](const std::string& a, const std::string& b) {
                   return !a.ends_with(".index") && b.ends_with(".index");
                 }));
  for (const std::string& path : old) {
    const std::string name = path.substr(run->remote_dir.size() + 1);
    if (std::find(written.begin(), written.end(), name) == written.end()) {
      DTF_RETURN_IF_ERROR(RemoveFile(path));
    }
  }
  return OkStatus();
}

StatusOr<GenRecordsResult> StagedRecords::StageRemote(
    const GenRecordsOptions& options) {
  if (options.parts != 1) {
    return InvalidArgumentError(
        StrCat(options.out_dir,
               ": a part of a spread conversion writes to a local directory"));
  }
  auto run = std::make_unique<RemoteRun>();
  run->remote_dir = options.out_dir;
  while (run->remote_dir.ends_with('/')) run->remote_dir.pop_back();
  for (const SplitFraction& s : options.splits) run->splits.push_back(s.name);
  if (run->splits.empty()) run->splits.push_back("");
  if (!options.overwrite) {
    DTF_ASSIGN_OR_RETURN(std::vector<std::string> old,
                         RemoteShards(run->remote_dir, run->splits));
    if (!old.empty()) {
      return FailedPreconditionError(
          StrCat(run->remote_dir, ": already holds shards (", old.front(),
                 "); pass --overwrite to replace them"));
    }
  }
  DTF_ASSIGN_OR_RETURN(run->local, LocalStagingDir::Create("gen-records"));
  GenRecordsOptions local = options;
  local.out_dir = run->local.path();
  local.overwrite = true;
  DTF_ASSIGN_OR_RETURN(GenRecordsResult result, Stage(local));
  for (auto& out : result.outputs) {
    out.path = StrCat(run->remote_dir, out.path.substr(local.out_dir.size()));
  }
  remote_.push_back(std::move(run));
  return result;
}

}  // namespace dtf
