// dtf pack: the archives dtf launch ships to hosts (docs/pack.md). `env`
// packs this dtf and the shared libraries it needs; `zip` packs a job;
// `list` checks an archive and shows what went in.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/run_common.h"
#include "lib/base/build_config.h"
#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/pack/pack_image.h"
#include "lib/launch/pack/pack_job.h"
#include "lib/launch/pack/unpack.h"

namespace dtf::cli {
namespace {

// An archive bound for a bucket (--out s3://... or --output s3://...): made
// in `staging`, then uploaded (whole) beside `remote`. Returns the remote
// path of `local`.
StatusOr<std::string> Upload(const std::string& local,
                             const std::string& remote_dir) {
  const std::string name = local.substr(local.rfind('/') + 1);
  const std::string to = JoinPath(remote_dir, name);
  DTF_RETURN_IF_ERROR(CopyFile(local, to));
  return to;
}

// An archive in a bucket, copied into `staging` for reading.
StatusOr<std::string> LocalArchive(const std::string& archive,
                                   LocalStagingDir* staging) {
  if (!IsRemotePath(archive)) return archive;
  DTF_ASSIGN_OR_RETURN(*staging, LocalStagingDir::Create("archive"));
  const std::string local =
      JoinPath(staging->path(), archive.substr(archive.rfind('/') + 1));
  DTF_RETURN_IF_ERROR(CopyFile(archive, local));
  return local;
}

struct PackFlags {
  std::string out = ".dtf/pack";
  bool json = false;
  // env
  bool strip_debug = false;
  // zip
  std::string job = "dtf.toml";
  bool with_data = false;
  // list
  std::string archive;
  // image
  std::string output = ".dtf/pack/dtf-image.tar";
  std::string tag;
};

// LD_LIBRARY_PATH's directories (':' or ';' separated, as ld.so reads it).
std::vector<std::string> LibraryPathFromEnvironment() {
  std::vector<std::string> dirs;
  const char* value = std::getenv("LD_LIBRARY_PATH");
  if (value == nullptr) return dirs;
  std::string dir;
  for (const char* p = value;; ++p) {
    if (*p == ':' || *p == ';' || *p == '\0') {
      if (!dir.empty()) dirs.push_back(dir);
      dir.clear();
      if (*p == '\0') break;
    } else {
      dir.push_back(*p);
    }
  }
  return dirs;
}

std::string HumanSize(uint64_t bytes) {
  if (bytes < 10 * 1024) return StrCat(bytes, " B");
  if (bytes < 10 * 1024 * 1024) return StrCat(bytes / 1024, " KiB");
  return StrCat(bytes / (1024 * 1024), " MiB");
}

std::string ImageSummaryJson(const pack::ImageResult& r) {
  std::string json =
      pack::ArchiveSummaryToJson(r.path, r.manifest_digest, r.size, r.manifest);
  // {"archive": ..., "image": {...}, "sha256": ...}
  const size_t comma = json.find(',');
  json.insert(comma + 1, StrCat("\n  \"image\": {\"tag\": \"", r.tag,
                                "\", \"manifest\": \"", r.manifest_digest,
                                "\", \"config\": \"", r.config_digest,
                                "\", \"layer\": \"", r.layer_digest,
                                "\", \"layer_size\": ", r.layer_size, "},"));
  return json;
}

// The files table dtf pack list prints.
std::string FilesTable(const pack::Manifest& m) {
  size_t width = 4;
  for (const pack::ManifestFile& file : m.files) {
    width = std::max(width, std::to_string(file.size).size());
  }
  std::string text = fmt::format("{:<4}  {:>{}}  {:<64}  {}\n", "mode", "size",
                                 width, "sha256", "path");
  for (const pack::ManifestFile& file : m.files) {
    StrAppend(&text,
              fmt::format("{}  {:>{}}  {}  {}\n", pack::ModeString(file.mode),
                          file.size, width, file.sha256, file.path));
  }
  return text;
}

Status ListImage(const PackFlags& f, const std::string& archive) {
  DTF_ASSIGN_OR_RETURN(pack::ImageResult r, pack::ListImage(archive));
  r.path = f.archive;
  if (f.json) return PrintStdout(ImageSummaryJson(r));
  const pack::Manifest& m = r.manifest;
  std::string text =
      StrCat(r.path, ": OCI image ", r.tag.empty() ? "(untagged)" : r.tag,
             " of dtf ", m.dtf_version, ", entry /", m.entry, ", ", m.arch,
             ", glibc packed\nmanifest ", r.manifest_digest, ", ", r.size,
             " bytes; every blob matches its digest, every file ",
             pack::kImageManifest, "\n");
  StrAppend(&text, FilesTable(m));
  return PrintStdout(text);
}

Status Report(const PackFlags& f, const pack::PackResult& r, Context* ctx) {
  if (f.json) {
    return PrintStdout(pack::ArchiveSummaryToJson(
        r.archive.path, r.archive.sha256, r.archive.size, r.manifest));
  }
  uint64_t total = 0;
  for (const pack::ManifestFile& file : r.manifest.files) total += file.size;
  ctx->console.Info(StrCat("dtf: packed ", r.manifest.files.size(), " files (",
                           HumanSize(total), ", ", HumanSize(r.archive.size),
                           " compressed)"));
  return PrintStdout(StrCat(r.archive.path, "\n"));
}

Status RunPackEnv(const PackFlags& f, Context* ctx) {
  pack::PackEnvOptions options;
  DTF_ASSIGN_OR_RETURN(options.binary, SelfExecutable());
  options.dtf_version = kVersion;
  options.search.library_path = LibraryPathFromEnvironment();
  LocalStagingDir staging;
  if (IsRemotePath(f.out)) {
    DTF_ASSIGN_OR_RETURN(staging, LocalStagingDir::Create("pack"));
  }
  options.out_dir = staging.path().empty() ? f.out : staging.path();
  options.strip_debug = f.strip_debug;
  DTF_ASSIGN_OR_RETURN(pack::PackResult r, pack::PackEnv(options));
  if (!staging.path().empty()) {
    DTF_ASSIGN_OR_RETURN(r.archive.path, Upload(r.archive.path, f.out));
  }
  if (!f.json && !r.manifest.glibc.empty()) {
    ctx->console.Info(StrCat("dtf: the hosts need glibc ", r.manifest.glibc,
                             " or newer (", r.manifest.arch, ")"));
  }
  return Report(f, r, ctx);
}

Status RunPackImage(const PackFlags& f, Context* ctx) {
  pack::PackImageOptions options;
  DTF_ASSIGN_OR_RETURN(options.binary, SelfExecutable());
  options.dtf_version = kVersion;
  options.search.library_path = LibraryPathFromEnvironment();
  options.tag = f.tag;
  LocalStagingDir staging;
  if (IsRemotePath(f.output)) {
    DTF_ASSIGN_OR_RETURN(staging, LocalStagingDir::Create("pack"));
    options.output =
        JoinPath(staging.path(), f.output.substr(f.output.rfind('/') + 1));
  } else {
    options.output = f.output;
  }
  DTF_ASSIGN_OR_RETURN(pack::ImageResult r, pack::PackImage(options));
  if (!staging.path().empty()) {
    DTF_RETURN_IF_ERROR(CopyFile(r.path, f.output));
    r.path = f.output;
  }
  if (f.json) return PrintStdout(ImageSummaryJson(r));
  uint64_t total = 0;
  for (const pack::ManifestFile& file : r.manifest.files) total += file.size;
  ctx->console.Info(StrCat("dtf: image ", r.tag, " of ",
                           r.manifest.files.size(), " files (",
                           HumanSize(total), ", ", HumanSize(r.layer_size),
                           " compressed), ", r.manifest_digest));
  return PrintStdout(StrCat(r.path, "\n"));
}

Status RunPackZip(const PackFlags& f, Context* ctx) {
  pack::PackJobOptions options;
  options.job = f.job;
  options.with_data = f.with_data;
  options.dtf_version = kVersion;
  LocalStagingDir staging;
  if (IsRemotePath(f.out)) {
    DTF_ASSIGN_OR_RETURN(staging, LocalStagingDir::Create("pack"));
  }
  options.out_dir = staging.path().empty() ? f.out : staging.path();
  DTF_ASSIGN_OR_RETURN(pack::PackResult r, pack::PackJob(options));
  if (!staging.path().empty()) {
    DTF_ASSIGN_OR_RETURN(r.archive.path, Upload(r.archive.path, f.out));
  }
  return Report(f, r, ctx);
}

Status RunPackList(const PackFlags& f) {
  LocalStagingDir staging;
  DTF_ASSIGN_OR_RETURN(const std::string archive,
                       LocalArchive(f.archive, &staging));
  if (pack::LooksLikeTar(archive)) return ListImage(f, archive);
  DTF_ASSIGN_OR_RETURN(pack::ArchiveListing listing,
                       pack::ListArchive(archive));
  listing.path = f.archive;
  const pack::Manifest& m = listing.manifest;
  if (f.json) {
    return PrintStdout(pack::ArchiveSummaryToJson(listing.path, listing.sha256,
                                                  listing.size, m));
  }
  std::string text = StrCat(listing.path, ": ", m.kind, " archive of dtf ",
                            m.dtf_version, ", entry ", m.entry);
  if (m.kind == pack::kKindEnv) {
    StrAppend(&text, ", ", m.arch, ", glibc ",
              m.glibc.empty() ? "any" : StrCat(">= ", m.glibc));
    if (!m.cuda.empty()) StrAppend(&text, ", CUDA ", m.cuda);
    if (!m.nccl.empty()) StrAppend(&text, ", NCCL ", m.nccl);
  } else {
    StrAppend(&text, m.with_data ? ", with data" : ", without data");
  }
  StrAppend(&text, "\nsha256 ", listing.sha256, ", ", listing.size,
            " bytes; every entry matches manifest.json\n");
  StrAppend(&text, FilesTable(m));
  return PrintStdout(text);
}

Status RunPackVerify(const PackFlags& f) {
  DTF_ASSIGN_OR_RETURN(const pack::Manifest m, pack::VerifyTree(f.archive));
  return PrintStdout(StrCat(f.archive, ": ", m.files.size(),
                            " files match manifest.json (", m.kind,
                            " archive of dtf ", m.dtf_version, ")\n"));
}

Status RunPackUnpack(const PackFlags& f) {
  LocalStagingDir staging;
  DTF_ASSIGN_OR_RETURN(const std::string archive,
                       LocalArchive(f.archive, &staging));
  DTF_ASSIGN_OR_RETURN(const pack::Manifest m,
                       pack::UnpackArchive(archive, f.out));
  return PrintStdout(StrCat(f.archive, ": ", m.files.size(),
                            " files unpacked into ", f.out,
                            ", every one matching manifest.json\n"));
}

}  // namespace

void SetupPack(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<PackFlags>();
  CLI::App* sub = app->add_subcommand(
      "pack",
      "Make the archives dtf launch ships to hosts: the runtime (env, image) "
      "and the job (zip); list one");
  sub->require_subcommand(1);

  CLI::App* env = sub->add_subcommand(
      "env",
      "Pack this dtf and every shared library it needs beyond glibc into a "
      "relocatable archive");
  env->add_option("--out", f->out,
                  "Directory for the archive (default: .dtf/pack)");
  env->add_flag("--json", f->json,
                "Print the archive and its manifest as JSON");
  env->add_flag("--strip-debug", f->strip_debug,
                "Pack the binary without its debug sections (objcopy "
                "--strip-debug; what dtf launch ships over SSH)");
  env->callback([f, ctx] { ctx->status = RunPackEnv(*f, ctx); });

  CLI::App* image = sub->add_subcommand(
      "image",
      "Pack this dtf, its shared libraries, glibc and the loader into an OCI "
      "image archive (no base image, no registry)");
  image->add_option("--output", f->output,
                    "The image archive (default: .dtf/pack/dtf-image.tar)");
  image->add_option("--tag", f->tag, "The image's name (default: dtf:VERSION)");
  image->add_flag("--json", f->json,
                  "Print the archive, its digests and its manifest as JSON");
  image->callback([f, ctx] { ctx->status = RunPackImage(*f, ctx); });

  CLI::App* zip = sub->add_subcommand(
      "zip",
      "Pack the job file and the files it names (vocabularies); data only "
      "with --with-data");
  zip->add_option("--job", f->job, "The job file (default: dtf.toml)");
  zip->add_flag("--with-data", f->with_data,
                "Pack the CSV files and the records directory too");
  zip->add_option("--out", f->out,
                  "Directory for the archive (default: .dtf/pack)");
  zip->add_flag("--json", f->json,
                "Print the archive and its manifest as JSON");
  zip->callback([f, ctx] { ctx->status = RunPackZip(*f, ctx); });

  CLI::App* list = sub->add_subcommand(
      "list", "Check an archive against its manifest and show what went in");
  list->add_option("archive", f->archive, "The .zip or image .tar file")
      ->required();
  list->add_flag("--json", f->json,
                 "Print the archive and its manifest as JSON");
  list->callback([f, ctx] { ctx->status = RunPackList(*f); });

  CLI::App* unpack = sub->add_subcommand(
      "unpack",
      "Check an archive against its manifest and unpack it into a directory "
      "(files renamed into place only once all are verified)");
  unpack->add_option("archive", f->archive, "The .zip file")->required();
  unpack->add_option("dir", f->out, "Where to unpack it")->required();
  unpack->callback([f, ctx] { ctx->status = RunPackUnpack(*f); });

  CLI::App* verify = sub->add_subcommand(
      "verify",
      "Check an unpacked archive's files against its manifest.json (sizes, "
      "SHA-256, modes)");
  verify->add_option("dir", f->archive, "The unpacked archive's directory")
      ->required();
  verify->callback([f, ctx] { ctx->status = RunPackVerify(*f); });
}

}  // namespace dtf::cli
