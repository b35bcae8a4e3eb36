#include "cmd/manual.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cmd/usage.h"
#include "lib/base/strings.h"

namespace dtf::cli {

namespace fs = std::filesystem;

std::string ManDirFor(const std::string& binary) {
  return (fs::path(binary).parent_path() / ".." / "share" / "man")
      .lexically_normal()
      .string();
}

StatusOr<std::string> ManPageFor(CLI::App* app, const std::string& man_dir,
                                 const std::vector<std::string>& words) {
  std::string page = "man1/dtf.1";
  if (words.size() == 1 && words[0] == "dtf.toml") {
    page = "man5/dtf.toml.5";
  } else if (!words.empty() && words[0] != "help") {  // dtf(1) has help
    DTF_RETURN_IF_ERROR(CheckArgs(app, {words[0]}));
    page = StrCat("man1/dtf-", words[0], ".1");
  }
  const std::string path = (fs::path(man_dir) / page).string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return NotFoundError(
        StrCat("no manual page ", path,
               " (pages are installed by 'cmake --install' into "
               "<prefix>/share/man, and copied into <build>/share/man by "
               "the build)"));
  }
  return path;
}

Status ExecMan(const std::string& page) {
  std::fflush(stdout);
  const char* argv[] = {"man", page.c_str(), nullptr};
  ::execvp("man", const_cast<char* const*>(argv));
  // This machine lacks man(1): an environment error (exit 3) that says
  // where the page is.
  return ResourceExhaustedError(
      StrCat("cannot run man to show ", page, ": ", std::strerror(errno)));
}

}  // namespace dtf::cli
