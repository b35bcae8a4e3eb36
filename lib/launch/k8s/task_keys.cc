#include "lib/launch/k8s/task_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace dtf::launch::k8s {
namespace {

namespace fs = std::filesystem;

// Writes `contents` to `path`, mode 0400 (a file there from an earlier
// run of the init container in the same pod is replaced).
Status WriteReadOnly(const std::string& path, const std::string& contents) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  }
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (fd < 0) {
    return UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n =
        ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return UnavailableError(StrCat(path, ": ", std::strerror(err)));
    }
    done += size_t(n);
  }
  if (::close(fd) != 0) {
    return UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  }
  return OkStatus();
}

}  // namespace

StatusOr<TaskName> TaskFromIndex(const std::string& variable,
                                 const std::string& value, int ps, int workers,
                                 Role role, int offset) {
  int index = -1;
  const auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), index);
  const int limit = ps >= 0 ? ps + workers : 100000;
  if (value.empty() || ec != std::errc() ||
      end != value.data() + value.size() || index < 0 || index >= limit) {
    return InvalidArgumentError(StrCat(variable,
                                       ": expected an index from 0 to ",
                                       limit - 1, ", got \"", value, "\""));
  }
  if (ps >= 0) {
    return index < ps ? TaskName{Role::kPs, index}
                      : TaskName{Role::kWorker, index - ps};
  }
  return TaskName{role, index + offset};
}

StatusOr<std::vector<std::string>> CopyTaskKeys(const std::string& from,
                                                const std::string& to,
                                                const TaskName& task) {
  const std::string self = task.DirName();
  const fs::path source(from);
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return UnavailableError(StrCat(to, ": ", ec.message()));
  auto has = [&](const std::string& name) {
    return fs::exists(source / name, ec);
  };
  std::vector<std::string> names = {"secret"};
  if (has("ca.pem")) {
    names.insert(names.end(), {"ca.pem", self + ".pem", self + ".key"});
  }
  if (has("s3-credentials")) names.push_back("s3-credentials");
  for (const std::string& name : names) {
    const std::string path = (source / name).string();
    if (!has(name)) {
      return NotFoundError(StrCat(path, ": the run's Secret holds no ", name,
                                  " for ", task.ToString()));
    }
    DTF_ASSIGN_OR_RETURN(const std::string data, ReadFileToString(path));
    DTF_RETURN_IF_ERROR(WriteReadOnly((fs::path(to) / name).string(), data));
  }
  return names;
}

}  // namespace dtf::launch::k8s
