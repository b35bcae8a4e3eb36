// profile.h's entry points that read every backend's table: ParseProfile
// with lib/launch/backends.cc's ProfileTableOf, and the profile files it
// reads. Built into the factory's target (dtf_launch), above the backends.
#include <filesystem>
#include <string>

#include "lib/base/bounded_read.h"
#include "lib/base/strings.h"
#include "lib/base/toml_limits.h"
#include "lib/launch/backend.h"
#include "lib/launch/profile.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

}  // namespace

StatusOr<Profile> ParseProfile(std::string_view text, std::string source,
                               std::string name,
                               const ProfileOptions& options) {
  return ParseProfileWith(text, std::move(source), std::move(name), options,
                          &ProfileTableOf);
}

StatusOr<Profile> LoadProfileFile(const std::string& path,
                                  const ProfileOptions& options) {
  DTF_ASSIGN_OR_RETURN(const std::string text,
                       ReadFileToStringAtMost(path, toml_util::kMaxTomlBytes));
  return ParseProfile(text, path, fs::path(path).stem().string(), options);
}

StatusOr<Profile> ResolveProfile(const std::string& job_dir,
                                 const std::string& arg,
                                 const ProfileOptions& options) {
  if (arg.empty()) return InvalidArgumentError("--profile: empty name");
  const bool is_path = arg.find('/') != std::string::npos ||
                       (arg.size() > 5 && arg.ends_with(".toml"));
  if (is_path) return LoadProfileFile(arg, options);
  const std::string path =
      (fs::path(job_dir) / "profiles" / (arg + ".toml")).string();
  std::error_code ec;
  if (fs::exists(path, ec)) return LoadProfileFile(path, options);
  if (arg == "local") {
    return ParseProfile(kDefaultLocalProfile, kBuiltInProfileSource, "local",
                        options);
  }
  return NotFoundError(
      StrCat("profile \"", arg, "\": no ", path,
             " (give a name under profiles/ or a path to a .toml file)"));
}

}  // namespace dtf::launch
