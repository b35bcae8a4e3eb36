#include "lib/launch/pack/unpack.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>

#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/archive_reader.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

// manifest.json is small; anything larger is not one.
constexpr uint64_t kManifestLimit = 64 << 20;

// Checks the archive's entries against its manifest before anything is
// extracted; returns, for each manifest file, its entry's index.
struct Checked {
  Manifest manifest;
  std::vector<size_t> index;  // parallel to manifest.files
};

StatusOr<Checked> CheckEntries(const ArchiveReader& reader) {
  const std::string& zip = reader.path();
  DTF_RETURN_IF_ERROR(reader.CheckEntryNames());
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < reader.entries().size(); ++i) {
    const ArchiveReader::Entry& e = reader.entries()[i];
    if (!by_name.emplace(e.name, i).second) {
      return DataLossError(
          StrCat(zip, ": ", e.name, ": appears twice in the archive"));
    }
  }
  auto manifest_it = by_name.find(kManifestName);
  if (manifest_it == by_name.end()) {
    return DataLossError(
        StrCat(zip, ": no ", kManifestName, "; not an archive of dtf pack"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string json,
                       reader.ReadAll(manifest_it->second, kManifestLimit));
  Checked out;
  DTF_ASSIGN_OR_RETURN(out.manifest,
                       ParseManifest(json, StrCat(zip, ": ", kManifestName)));
  for (const ManifestFile& f : out.manifest.files) {
    auto it = by_name.find(f.path);
    if (it == by_name.end()) {
      return DataLossError(
          StrCat(zip, ": ", f.path, ": listed in the manifest but missing"));
    }
    const ArchiveReader::Entry& e = reader.entries()[it->second];
    if (!e.regular) {
      return DataLossError(StrCat(zip, ": ", f.path, ": not a plain file"));
    }
    if (e.size != f.size) {
      return DataLossError(StrCat(zip, ": ", f.path, ": ", e.size,
                                  " bytes, the manifest says ", f.size));
    }
    if (e.mode != f.mode) {
      return DataLossError(StrCat(zip, ": ", f.path, ": mode ",
                                  ModeString(e.mode), ", the manifest says ",
                                  ModeString(f.mode)));
    }
    out.index.push_back(it->second);
    by_name.erase(it);
  }
  by_name.erase(kManifestName);
  if (!by_name.empty()) {
    return DataLossError(StrCat(zip, ": ", by_name.begin()->first,
                                ": not listed in the manifest"));
  }
  return out;
}

// Streams entry `index` through SHA-256 (and into `sink`), then compares.
Status VerifyEntry(const ArchiveReader& reader, size_t index,
                   const ManifestFile& file,
                   const std::function<Status(std::string_view)>& sink) {
  DTF_ASSIGN_OR_RETURN(Sha256 sha, Sha256::Create());
  uint64_t size = 0;
  DTF_RETURN_IF_ERROR(reader.Read(index, [&](std::string_view chunk) {
    size += chunk.size();
    DTF_RETURN_IF_ERROR(sha.Update(chunk));
    return sink ? sink(chunk) : OkStatus();
  }));
  DTF_ASSIGN_OR_RETURN(const std::string digest, sha.HexDigest());
  if (size != file.size || digest != file.sha256) {
    return DataLossError(StrCat(reader.path(), ": ", file.path, ": sha256 ",
                                digest, " (", size,
                                " bytes) does not match the manifest's ",
                                file.sha256, " (", file.size, " bytes)"));
  }
  return OkStatus();
}

// Removes the staging directory unless released.
class StagingDir {
 public:
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  ~StagingDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

StatusOr<ArchiveListing> ListArchive(const std::string& zip_path) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveReader> reader,
                       ArchiveReader::Open(zip_path));
  DTF_ASSIGN_OR_RETURN(Checked checked, CheckEntries(*reader));
  for (size_t i = 0; i < checked.index.size(); ++i) {
    DTF_RETURN_IF_ERROR(VerifyEntry(*reader, checked.index[i],
                                    checked.manifest.files[i], nullptr));
  }
  ArchiveListing out;
  out.path = zip_path;
  DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(zip_path));
  out.sha256 = digest.sha256;
  out.size = digest.size;
  out.manifest = std::move(checked.manifest);
  return out;
}

StatusOr<Manifest> UnpackArchive(const std::string& zip_path,
                                 const std::string& dest_dir) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveReader> reader,
                       ArchiveReader::Open(zip_path));
  DTF_ASSIGN_OR_RETURN(Checked checked, CheckEntries(*reader));
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dest_dir);
  std::string staging_name = StrCat(dest_dir, "/.dtf-unpack.XXXXXX");
  if (::mkdtemp(staging_name.data()) == nullptr) {
    return ErrnoToStatus(errno, staging_name);
  }
  StagingDir staging(staging_name);

  const std::vector<ManifestFile>& files = checked.manifest.files;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string target = StrCat(staging.path(), "/", files[i].path);
    fs::create_directories(fs::path(target).parent_path(), ec);
    if (ec)
      return ErrnoToStatus(ec.value(), fs::path(target).parent_path().string());
    const int fd =
        ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoToStatus(errno, target);
    Status status = VerifyEntry(
        *reader, checked.index[i], files[i],
        [&](std::string_view chunk) { return WriteAllFd(fd, chunk, target); });
    if (status.ok() && ::fchmod(fd, files[i].mode) != 0) {
      status = ErrnoToStatus(errno, target);
    }
    if (status.ok() && ::fsync(fd) != 0) status = ErrnoToStatus(errno, target);
    if (::close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, target);
    DTF_RETURN_IF_ERROR(status);
  }
  // Every file verified: move them into place.
  for (const ManifestFile& f : files) {
    const fs::path to = fs::path(dest_dir) / f.path;
    fs::create_directories(to.parent_path(), ec);
    if (ec) return ErrnoToStatus(ec.value(), to.parent_path().string());
    const std::string from = StrCat(staging.path(), "/", f.path);
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoToStatus(errno, to.string());
    }
  }
  return std::move(checked.manifest);
}

StatusOr<Manifest> VerifyTree(const std::string& dir) {
  const std::string manifest_path = dir + "/manifest.json";
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(manifest_path));
  DTF_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_path));
  for (const ManifestFile& file : manifest.files) {
    const std::string path = dir + "/" + file.path;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, path);
    DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(path));
    if (digest.size != file.size || digest.sha256 != file.sha256) {
      return DataLossError(StrCat(path, ": ", digest.size, " bytes, sha256 ",
                                  digest.sha256, "; the manifest says ",
                                  file.size, " bytes, sha256 ", file.sha256));
    }
    if ((st.st_mode & 07777) != file.mode) {
      return DataLossError(
          StrCat(path, ": mode ", ModeString(st.st_mode & 07777),
                 "; the manifest says ", ModeString(file.mode)));
    }
  }
  return manifest;
}

}  // namespace dtf::pack
