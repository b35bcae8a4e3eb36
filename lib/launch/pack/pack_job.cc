#include "lib/launch/pack/pack_job.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>

#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

// The deepest directory holding both.
fs::path CommonAncestor(const fs::path& a, const fs::path& b) {
  fs::path out;
  auto i = a.begin();
  auto j = b.begin();
  for (; i != a.end() && j != b.end() && *i == *j; ++i, ++j) out /= *i;
  return out;
}

// A file whose path runs through a .dtf or .ssh directory (run secrets,
// SSH keys) never goes into an archive.
Status CheckNotSecret(const fs::path& path, const std::string& job) {
  for (const fs::path& part : path.parent_path()) {
    if (part == ".dtf" || part == ".ssh") {
      return PermissionDeniedError(
          StrCat(job, ": refusing to pack ", path.string(), ": it lies under ",
                 part.string(), "/, where run secrets and keys live"));
    }
  }
  return OkStatus();
}

// The files a path of [data] csv stands for: itself, or what its glob
// matches, sorted.
StatusOr<std::vector<std::string>> ExpandCsv(const std::string& pattern,
                                             const std::string& job) {
  if (pattern == "-") return std::vector<std::string>{};  // standard input
  glob_t g = {};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && out.empty())) {
    return NotFoundError(StrCat(job, ": data.csv: no file matches ", pattern));
  }
  if (rc != 0) {
    return ErrnoToStatus(errno != 0 ? errno : EIO, pattern);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The regular files under the records directory, skipping hidden names
// (gen-records' staging directories); none when it does not exist.
StatusOr<std::vector<std::string>> RecordFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  fs::recursive_directory_iterator it(dir, ec), end;
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (; it != end; it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), dir);
    if (it->path().filename().string().starts_with(".")) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  if (ec) return ErrnoToStatus(ec.value(), dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

StatusOr<PackResult> PackJob(const PackJobOptions& options) {
  std::error_code ec;
  const std::string job_path =
      fs::absolute(options.job, ec).lexically_normal().string();
  if (ec) return ErrnoToStatus(ec.value(), options.job);
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadJobFile(job_path));

  // Every file, absolute and normalized, in a set: one entry each.
  std::set<std::string> files = {job_path};
  for (const CategoricalFeature& f : job.features.categorical) {
    if (!f.vocabulary_file.empty()) {
      files.insert(fs::path(f.vocabulary_file).lexically_normal().string());
    }
  }
  if (options.with_data) {
    for (const CsvSource& source : job.data.csv) {
      for (const std::string& pattern : source.paths) {
        DTF_ASSIGN_OR_RETURN(const std::vector<std::string> matched,
                             ExpandCsv(pattern, job_path));
        for (const std::string& m : matched) {
          files.insert(fs::absolute(m).lexically_normal().string());
        }
      }
    }
    const std::string records =
        fs::absolute(fs::path(job.dir) / job.data.records_dir)
            .lexically_normal()
            .string();
    DTF_ASSIGN_OR_RETURN(const std::vector<std::string> record_files,
                         RecordFiles(records));
    for (const std::string& r : record_files) {
      files.insert(fs::path(r).lexically_normal().string());
    }
  }

  fs::path root = fs::path(job_path).parent_path();
  for (const std::string& f : files) {
    DTF_RETURN_IF_ERROR(CheckNotSecret(f, job_path));
    root = CommonAncestor(root, fs::path(f).parent_path());
  }

  Manifest manifest;
  manifest.kind = kKindJob;
  manifest.dtf_version = options.dtf_version;
  manifest.with_data = options.with_data;
  manifest.entry = fs::path(job_path).lexically_relative(root).string();
  ZipWriter zip;
  for (const std::string& f : files) {
    const std::string entry = fs::path(f).lexically_relative(root).string();
    struct stat st;
    if (::stat(f.c_str(), &st) != 0) return ErrnoToStatus(errno, f);
    const uint32_t mode = (st.st_mode & S_IXUSR) ? kModeExecutable : kModeFile;
    DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(f));
    DTF_RETURN_IF_ERROR(zip.AddFile(entry, f, mode));
    manifest.files.push_back({entry, digest.size, digest.sha256, mode});
  }
  return WriteArchive(&zip, std::move(manifest), options.out_dir,
                      kJobArchivePrefix);
}

StatusOr<PackResult> PackFiles(const PackFilesOptions& options,
                               std::string_view what) {
  Manifest manifest;
  manifest.kind = kKindJob;
  manifest.dtf_version = options.dtf_version;
  manifest.with_data = options.with_data;
  manifest.entry = options.entry;
  std::set<std::string> names;
  ZipWriter zip;
  for (const auto& [entry, f] : options.files) {
    const fs::path name = fs::path(entry).lexically_normal();
    if (entry.empty() || name.is_absolute() ||
        name.string().starts_with("..") || !names.insert(name).second) {
      return InvalidArgumentError(StrCat(what, ": archive entry \"", entry,
                                         "\" is not a new relative name"));
    }
    DTF_RETURN_IF_ERROR(CheckNotSecret(f, std::string(what)));
    struct stat st;
    if (::stat(f.c_str(), &st) != 0) return ErrnoToStatus(errno, f);
    const uint32_t mode = (st.st_mode & S_IXUSR) ? kModeExecutable : kModeFile;
    DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(f));
    DTF_RETURN_IF_ERROR(zip.AddFile(name.string(), f, mode));
    manifest.files.push_back({name.string(), digest.size, digest.sha256, mode});
  }
  return WriteArchive(&zip, std::move(manifest), options.out_dir,
                      options.prefix);
}

}  // namespace dtf::pack
