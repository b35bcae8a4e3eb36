#include "cmd/remote_output.h"

#include <chrono>
#include <vector>

#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"

namespace dtf::cli {

StatusOr<std::unique_ptr<StorageMirror>> MirrorOutputDir(JobFile* job) {
  if (!IsRemotePath(job->train.output_dir)) return nullptr;
  StatusOr<std::unique_ptr<StorageMirror>> mirror = StorageMirror::Open(
      job->train.output_dir, {std::string(runtime::kCheckpointFile),
                              std::string(runtime::kBestCheckpointFile)});
  if (!mirror.ok()) {
    return Annotate(mirror.status(),
                    StrCat("train.output_dir ", job->train.output_dir));
  }
  job->train.output_dir = (*mirror)->local_dir();
  (*mirror)->SyncEvery(std::chrono::milliseconds(1000));
  return mirror;
}

Status FinishOutputMirror(StorageMirror* mirror, const Status& run) {
  if (mirror == nullptr) return run;
  const Status synced = mirror->Sync();
  if (!run.ok()) return run;
  return Annotate(synced,
                  StrCat("uploading the output to ", mirror->remote_dir()));
}

StatusOr<std::string> LocalModelDir(std::string_view flag,
                                    const std::string& model,
                                    LocalStagingDir* copy) {
  if (!IsRemotePath(model)) return model;
  DTF_ASSIGN_OR_RETURN(*copy, LocalStagingDir::Create("model"));
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> files,
                       DownloadTree(model, copy->path()));
  if (files.empty()) {
    return NotFoundError(
        StrCat(flag, " ", model, ": no exported model there (no files)"));
  }
  return copy->path();
}

std::string RemoteName(const StorageMirror* mirror, const std::string& path) {
  if (mirror == nullptr || !path.starts_with(mirror->local_dir())) return path;
  return StrCat(mirror->remote_dir(), path.substr(mirror->local_dir().size()));
}

}  // namespace dtf::cli
