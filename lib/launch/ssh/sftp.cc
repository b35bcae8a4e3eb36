// Session's SFTP members.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <random>

#include "lib/base/strings.h"
#include "lib/launch/ssh/session.h"
#include "lib/launch/ssh/session_impl.h"
#include "lib/launch/ssh/sftp_raw.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

struct FileCloser {
  void operator()(sftp_file file) const {
    if (file != nullptr) sftp_close(file);
  }
};
using FilePtr = std::unique_ptr<sftp_file_struct, FileCloser>;

struct AttributesDeleter {
  void operator()(sftp_attributes attributes) const {
    sftp_attributes_free(attributes);
  }
};
using AttributesPtr =
    std::unique_ptr<sftp_attributes_struct, AttributesDeleter>;

std::string RandomSuffix() {
  std::random_device random;
  std::uniform_int_distribution<uint32_t> dist;
  return fmt::format("{:08x}", dist(random));
}

}  // namespace

StatusOr<sftp_session> Session::Impl::Sftp() {
  if (sftp != nullptr) return sftp;
  sftp_session opened = sftp_new(session());
  if (opened == nullptr) return SshError(session(), label, "start SFTP");
  if (sftp_init(opened) != SSH_OK) {
    Status status = SshError(session(), label, "start SFTP");
    sftp_free(opened);
    return status;
  }
  sftp = opened;
  return sftp;
}

StatusOr<bool> Session::Exists(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(sftp_session sftp, impl_->Sftp());
  impl_->Touch();
  AttributesPtr attributes(sftp_lstat(sftp, path.c_str()));
  if (attributes != nullptr) return true;
  if (SftpNotFound(sftp)) return false;
  return SftpError(sftp, impl_->label, "stat", path);
}

Status Session::MakeDirs(const std::string& path, int mode) {
  DTF_ASSIGN_OR_RETURN(sftp_session sftp, impl_->Sftp());
  impl_->Touch();
  const std::string& label = impl_->label;
  if (path.empty()) {
    return InvalidArgumentError(StrCat(ErrorPrefix(label), "empty path"));
  }
  // Directories from the deepest existing one down.
  std::vector<std::string> missing;
  std::string current = path;
  while (!current.empty() && current != "/" && current != ".") {
    AttributesPtr attributes(sftp_stat(sftp, current.c_str()));
    if (attributes != nullptr) {
      if (attributes->type != SSH_FILEXFER_TYPE_DIRECTORY) {
        return FailedPreconditionError(StrCat(
            ErrorPrefix(label), current, " exists and is not a directory"));
      }
      break;
    }
    if (!SftpNotFound(sftp)) return SftpError(sftp, label, "stat", current);
    missing.push_back(current);
    size_t slash = current.find_last_of('/');
    if (slash == std::string::npos) break;
    current = current.substr(0, slash == 0 ? 1 : slash);
    while (current.size() > 1 && current.back() == '/') current.pop_back();
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    const std::string& dir = *it;
    if (sftp_mkdir(sftp, dir.c_str(), static_cast<mode_t>(mode)) != 0) {
      // Someone else may have made it meanwhile.
      AttributesPtr attributes(sftp_stat(sftp, dir.c_str()));
      if (attributes == nullptr ||
          attributes->type != SSH_FILEXFER_TYPE_DIRECTORY) {
        return SftpError(sftp, label, "mkdir", dir);
      }
      continue;
    }
    // The server's umask applies to mkdir; set the mode asked for.
    if (sftp_chmod(sftp, dir.c_str(), static_cast<mode_t>(mode)) != 0) {
      return SftpError(sftp, label, "chmod", dir);
    }
  }
  return OkStatus();
}

Status Session::Impl::WriteVia(Session* owner, const std::string& path,
                               int mode,
                               const std::function<Status(sftp_file)>& fill) {
  DTF_ASSIGN_OR_RETURN(sftp_session sftp, Sftp());
  Touch();
  std::string temp = StrCat(path, ".part-", RandomSuffix());
  FilePtr file(sftp_open(sftp, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL,
                         static_cast<mode_t>(mode)));
  if (file == nullptr) return SftpError(sftp, label, "create", temp);
  Status status = fill(file.get());
  if (status.ok() && sftp_close(file.release()) != SSH_NO_ERROR) {
    status = SftpError(sftp, label, "write", temp);
  }
  if (status.ok() &&
      sftp_chmod(sftp, temp.c_str(), static_cast<mode_t>(mode)) != 0) {
    status = SftpError(sftp, label, "chmod", temp);
  }
  if (status.ok()) status = owner->Rename(temp, path);
  if (!status.ok()) {
    file.reset();
    sftp_unlink(sftp, temp.c_str());
  }
  return status;
}

Status Session::WriteFile(const std::string& path, std::string_view data,
                          int mode) {
  return impl_->WriteVia(this, path, mode, [&](sftp_file file) {
    return WritePipelined(file, impl_->label, path,
                          [&](char* buffer, size_t size) -> StatusOr<size_t> {
                            size_t n = std::min(size, data.size());
                            std::copy_n(data.data(), n, buffer);
                            data.remove_prefix(n);
                            return n;
                          });
  });
}

Status Session::Upload(const std::string& local_path, const std::string& path,
                       int mode) {
  int fd = open(local_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, local_path);
  Status status = impl_->WriteVia(this, path, mode, [&](sftp_file file) {
    return WritePipelined(file, impl_->label, path,
                          [&](char* buffer, size_t size) -> StatusOr<size_t> {
                            while (true) {
                              ssize_t n = read(fd, buffer, size);
                              if (n >= 0) return static_cast<size_t>(n);
                              if (errno != EINTR)
                                return ErrnoToStatus(errno, local_path);
                            }
                          });
  });
  close(fd);
  return status;
}

StatusOr<std::optional<std::string>> Session::ReadAt(const std::string& path,
                                                     uint64_t offset,
                                                     size_t max) {
  DTF_ASSIGN_OR_RETURN(sftp_session sftp, impl_->Sftp());
  impl_->Touch();
  const std::string& label = impl_->label;
  FilePtr file(sftp_open(sftp, path.c_str(), O_RDONLY, 0));
  if (file == nullptr) {
    if (SftpNotFound(sftp)) return std::optional<std::string>();
    return SftpError(sftp, label, "open", path);
  }
  if (sftp_seek64(file.get(), offset) != 0) {
    return SftpError(sftp, label, "seek", path);
  }
  std::string out;
  std::string buffer(kSftpChunk, '\0');
  while (out.size() < max) {
    size_t want = std::min(kSftpChunk, max - out.size());
    ssize_t n = sftp_read(file.get(), buffer.data(), want);
    if (n < 0) return SftpError(sftp, label, "read", path);
    if (n == 0) break;
    out.append(buffer.data(), static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(out));
}

StatusOr<std::optional<std::string>> Session::ReadFile(const std::string& path,
                                                       size_t max) {
  size_t limit = max == SIZE_MAX ? max : max + 1;
  DTF_ASSIGN_OR_RETURN(std::optional<std::string> data, ReadAt(path, 0, limit));
  if (data.has_value() && data->size() > max) {
    return OutOfRangeError(StrCat(ErrorPrefix(impl_->label), path,
                                  " is larger than ", max, " bytes"));
  }
  return data;
}

Status Session::Rename(const std::string& from, const std::string& to) {
  DTF_ASSIGN_OR_RETURN(sftp_session sftp, impl_->Sftp());
  impl_->Touch();
  return PosixRename(sftp, impl_->label, from, to);
}

}  // namespace dtf::launch::ssh
