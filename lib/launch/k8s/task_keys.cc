#include "lib/launch/k8s/task_keys.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "lib/base/decimal.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace dtf::launch::k8s {

namespace fs = std::filesystem;

StatusOr<TaskName> TaskFromIndex(const std::string& variable,
                                 const std::string& value, int ps, int workers,
                                 Role role, int offset) {
  if (ps >= 0) return TaskAtIndex(variable, value, ps, workers);
  constexpr int64_t kLast = 99999;
  int64_t index = 0;
  if (!ParseDecimal(value, kLast, &index)) {
    return InvalidArgumentError(StrCat(variable,
                                       ": expected an index from 0 to ", kLast,
                                       ", got \"", value, "\""));
  }
  return TaskName{role, static_cast<int>(index) + offset};
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
    // Replaces the file an earlier run of the init container in the same
    // pod left.
    const std::string copy = (fs::path(to) / name).string();
    DTF_RETURN_IF_ERROR(WriteFileAtomically(copy, data));
    if (::chmod(copy.c_str(), 0400) != 0) return ErrnoToStatus(errno, copy);
  }
  return names;
}

}  // namespace dtf::launch::k8s
