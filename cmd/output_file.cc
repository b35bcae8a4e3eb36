#include "cmd/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "cmd/cli_output.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

const char* Kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

StatusOr<std::string> OutputTarget(std::string_view flag,
                                   const std::string& path) {
  if (path == "-") return path;
  if (path.empty()) {
    return InvalidArgumentError(StrCat(flag, ": an empty path"));
  }
  // An object is replaced whole by its upload (lib/base/storage.h).
  if (IsRemotePath(path)) {
    DTF_RETURN_IF_ERROR(ParseS3Path(path).status());
    return path;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    // What the path leads to, through any links (/dev/stdout to a pipe).
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgumentError(
          StrCat(flag, " ", path, ": ", Kind(st.st_mode),
                 ", not a regular file; dtf writes a whole file and renames "
                 "it into place (give a file path, or '-' for stdout)"));
    }
    std::error_code ec;
    const fs::path target = fs::canonical(path, ec);
    if (ec) return ErrnoToStatus(ec.value(), StrCat(flag, " ", path));
    return target.string();
  }
  if (errno != ENOENT) return ErrnoToStatus(errno, StrCat(flag, " ", path));
  // Nothing there yet, or a link whose target is to be created: follow the
  // links by hand.
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(at, ec))) {
      return at.lexically_normal().string();
    }
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) return ErrnoToStatus(ec.value(), StrCat(flag, " ", path));
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  return InvalidArgumentError(
      StrCat(flag, " ", path, ": too many levels of symbolic links"));
}

Status WriteOutput(std::string_view flag, const std::string& path,
                   std::string_view contents) {
  DTF_ASSIGN_OR_RETURN(const std::string target, OutputTarget(flag, path));
  if (target == "-") return PrintStdout(contents);
  return WriteWholeFile(target, contents);
}

}  // namespace dtf::cli
