#include "lib/base/storage_tree.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/base/storage.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

// `path` relative to `dir` (both as the seam spells them).
std::string Relative(const std::string& dir, const std::string& path) {
  std::string prefix = dir;
  if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
  return path.starts_with(prefix) ? path.substr(prefix.size()) : path;
}

}  // namespace

Status CopyFile(const std::string& from, const std::string& to) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> in,
                       OpenFileForRead(from));
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, CreateFile(to));
  std::string buffer(size_t{1} << 20, '\0');
  while (true) {
    size_t got = 0;
    DTF_RETURN_IF_ERROR(in->Read(buffer.size(), buffer.data(), &got));
    if (got == 0) break;
    DTF_RETURN_IF_ERROR(out->Append(std::string_view(buffer.data(), got)));
  }
  return out->Close();
}

StatusOr<std::vector<std::string>> UploadTree(
    const std::string& local_dir, const std::string& remote_dir,
    const std::function<bool(const std::string&, const std::string&)>& order) {
  DTF_ASSIGN_OR_RETURN(std::vector<FileInfo> files, ListTree(local_dir));
  std::vector<std::string> names;
  for (const FileInfo& f : files) names.push_back(Relative(local_dir, f.path));
  if (order) {
    std::stable_sort(names.begin(), names.end(), order);
  } else {
    std::sort(names.begin(), names.end());
  }
  for (const std::string& name : names) {
    DTF_RETURN_IF_ERROR(
        CopyFile(JoinPath(local_dir, name), JoinPath(remote_dir, name)));
  }
  return names;
}

StatusOr<std::vector<std::string>> DownloadTree(const std::string& remote_dir,
                                                const std::string& local_dir) {
  DTF_ASSIGN_OR_RETURN(std::vector<FileInfo> files, ListTree(remote_dir));
  std::vector<std::string> names;
  std::error_code ec;
  fs::create_directories(local_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), local_dir);
  for (const FileInfo& f : files) {
    const std::string name = Relative(remote_dir, f.path);
    names.push_back(name);
    const std::string local = JoinPath(local_dir, name);
    if (fs::exists(local, ec) && fs::file_size(local, ec) == f.size) continue;
    DTF_RETURN_IF_ERROR(CopyFile(f.path, local));
  }
  return names;
}

StatusOr<LocalStagingDir> LocalStagingDir::Create(const std::string& purpose) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  std::string name = absl::StrCat(ec ? std::string("/tmp") : tmp.string(),
                                  "/dtf-", purpose, "-XXXXXX");
  if (::mkdtemp(name.data()) == nullptr) {
    return ErrnoToStatus(errno, absl::StrCat("cannot create ", name));
  }
  LocalStagingDir dir;
  dir.path_ = name;
  return dir;
}

LocalStagingDir::LocalStagingDir(LocalStagingDir&& other) noexcept
    : path_(std::exchange(other.path_, "")) {}

LocalStagingDir& LocalStagingDir::operator=(LocalStagingDir&& other) noexcept {
  if (this != &other) {
    LocalStagingDir old(std::move(*this));
    path_ = std::exchange(other.path_, "");
  }
  return *this;
}

LocalStagingDir::~LocalStagingDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace dtf
