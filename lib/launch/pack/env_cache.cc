#include "lib/launch/pack/env_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "lib/base/build_config.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/elf_deps.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/sha256.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using CacheJson = nlohmann::ordered_json;

// A key for the runtime's inputs as they are now: the path, size and
// modification time of the binary and of every library it would pack.
StatusOr<std::string> EnvInputsKey(const std::string& binary) {
  DTF_ASSIGN_OR_RETURN(const std::vector<ResolvedLibrary> libs,
                       ResolveDependencies(binary, LibrarySearch{}));
  std::string key = kVersion;
  std::vector<std::string> paths = {binary};
  for (const ResolvedLibrary& lib : libs) paths.push_back(lib.path);
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, path);
    StrAppend(&key, "\n", path, " ", st.st_size, " ", st.st_mtim.tv_sec, ".",
              st.st_mtim.tv_nsec);
  }
  DTF_ASSIGN_OR_RETURN(const std::string digest, Sha256Hex(key));
  return digest.substr(0, 16);
}

}  // namespace

std::optional<PackResult> ReadEnvCache(const std::string& cache_file,
                                       std::string* note) {
  if (note != nullptr) note->clear();
  StatusOr<std::string> text = ReadFileToString(cache_file);
  if (!text.ok()) return std::nullopt;
  const CacheJson j =
      CacheJson::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("archive") || !j.contains("manifest") ||
      !j["archive"].is_string() || !j.contains("sha256") ||
      !j["sha256"].is_string() || !j.contains("size") ||
      !j["size"].is_number_unsigned()) {
    return std::nullopt;
  }
  PackResult r;
  r.archive.path = j["archive"].get<std::string>();
  r.archive.sha256 = j["sha256"].get<std::string>();
  r.archive.size = j["size"].get<uint64_t>();
  StatusOr<Manifest> m = ParseManifest(j["manifest"].dump(), cache_file);
  if (!m.ok()) return std::nullopt;
  StatusOr<FileDigest> digest = DigestFile(r.archive.path);
  if (!digest.ok()) {
    if (note != nullptr && digest.status().code() != StatusCode::kNotFound) {
      *note = StrCat("packing the runtime again: ", Message(digest.status()));
    }
    return std::nullopt;
  }
  if (digest->size != r.archive.size || digest->sha256 != r.archive.sha256) {
    if (note != nullptr) {
      *note = StrCat("packing the runtime again: ", r.archive.path, " is ",
                     digest->size, " bytes with sha256 ", digest->sha256,
                     ", not the ", r.archive.size, " bytes with sha256 ",
                     r.archive.sha256, " it was packed as");
    }
    return std::nullopt;
  }
  r.manifest = *std::move(m);
  return r;
}

Status WriteEnvCache(const std::string& cache_file, const PackResult& packed) {
  std::error_code ec;
  const std::string dir = fs::path(cache_file).parent_path().string();
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);
  const CacheJson j = {
      {"archive", packed.archive.path},
      {"sha256", packed.archive.sha256},
      {"size", packed.archive.size},
      {"manifest", CacheJson::parse(ManifestToJson(packed.manifest))}};
  return WriteFileAtomically(cache_file, j.dump(2) + "\n");
}

StatusOr<PackResult> PackEnvCached(const std::string& out,
                                   const std::string& search_path,
                                   std::string* note) {
  PackEnvOptions env;
  DTF_ASSIGN_OR_RETURN(env.binary, SelfExecutable());
  env.dtf_version = kVersion;
  env.out_dir = out;
  // What a host needs is the code; a debug build's binary is mostly debug
  // sections, which would cost every first launch their shipping.
  env.strip_debug = CanStripDebug(search_path);
  DTF_ASSIGN_OR_RETURN(std::string key, EnvInputsKey(env.binary));
  if (env.strip_debug) key += "-stripped";
  const std::string cache = StrCat(out, "/env-cache/", key, ".json");
  if (std::optional<PackResult> cached = ReadEnvCache(cache, note)) {
    return *std::move(cached);
  }
  DTF_ASSIGN_OR_RETURN(PackResult r, PackEnv(env));
  (void)WriteEnvCache(cache, r);
  return r;
}

}  // namespace dtf::pack
