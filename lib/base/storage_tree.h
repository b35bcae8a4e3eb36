// Whole files and directory trees moved between a local disk and the
// storage seam (lib/base/storage.h): what lets code that writes a local
// directory (gen-records' shards, checkpoints, exported models) keep its
// output in an object store.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf {

// Copies one file, streaming; `to` appears whole when it succeeds
// (CreateFile).
Status CopyFile(const std::string& from, const std::string& to);

// Copies every file below local directory `local_dir` to the same relative
// path below `remote_dir` (local or s3://), in the order `order` sorts the
// relative paths (default: by name), and returns the relative paths
// copied. Each file appears whole; the tree does not appear at once.
StatusOr<std::vector<std::string>> UploadTree(
    const std::string& local_dir, const std::string& remote_dir,
    const std::function<bool(const std::string&, const std::string&)>& order =
        nullptr);
// Copies every file below `remote_dir` into `local_dir` (created), files
// already there with the same size skipped, and returns the relative paths
// that are below `remote_dir`.
StatusOr<std::vector<std::string>> DownloadTree(const std::string& remote_dir,
                                                const std::string& local_dir);

// A fresh private directory under $TMPDIR (or /tmp) named for `purpose`,
// removed with what it holds when the object goes away.
class LocalStagingDir {
 public:
  static StatusOr<LocalStagingDir> Create(const std::string& purpose);
  LocalStagingDir() = default;
  LocalStagingDir(LocalStagingDir&& other) noexcept;
  LocalStagingDir& operator=(LocalStagingDir&& other) noexcept;
  ~LocalStagingDir();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace dtf
