#include "lib/launch/pack/pack_image.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/image_tar.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_format.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr char kOciManifestType[] =
    "application/vnd.oci.image.manifest.v1+json";
constexpr char kOciConfigType[] = "application/vnd.oci.image.config.v1+json";
constexpr char kOciLayerType[] = "application/vnd.oci.image.layer.v1.tar+gzip";
constexpr char kRefNameKey[] = "org.opencontainers.image.ref.name";

// OCI's GOARCH names for ELF machines.
std::string OciArchitecture(const std::string& machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  if (machine == "ppc64le" || machine == "ppc64") return "ppc64le";
  return machine;
}

StatusOr<std::string> Digest(std::string_view data) {
  DTF_ASSIGN_OR_RETURN(const std::string hex, Sha256Hex(data));
  return StrCat("sha256:", hex);
}

std::string BlobPath(const std::string& digest) {
  return StrCat("blobs/sha256/", digest.substr(7));
}

Json Descriptor(const char* type, const std::string& digest, size_t size) {
  Json d;
  d["mediaType"] = type;
  d["digest"] = digest;
  d["size"] = size;
  return d;
}

}  // namespace

bool IsGpuDriverLibrary(std::string_view name) {
  return name.starts_with("libcuda.so") || name.starts_with("libnvidia-") ||
         name.starts_with("libnvcuvid.so");
}

std::string DefaultImageTag(std::string_view dtf_version) {
  std::string tag(dtf_version);
  for (char& c : tag) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) c = '-';
  }
  if (tag.empty()) tag = "latest";
  return StrCat("dtf:", tag);
}

namespace {

// The image's one layer: the binary, its loader and the libraries it needs
// (GPU driver libraries are the host's), the manifest listing them, and
// /tmp. Fills `*manifest`.
StatusOr<std::vector<TarEntry>> LayerEntries(const PackImageOptions& options,
                                             const ElfFile& binary,
                                             Manifest* manifest) {
  LibrarySearch search = options.search;
  const std::string loader_name =
      fs::path(binary.interpreter).filename().string();
  search.exclude = [loader_name](std::string_view name) {
    return IsGpuDriverLibrary(name) || name == loader_name;
  };
  DTF_ASSIGN_OR_RETURN(const std::vector<ResolvedLibrary> libraries,
                       ResolveDependencies(options.binary, search));

  manifest->kind = kKindEnv;
  manifest->dtf_version = options.dtf_version;
  manifest->arch = MachineName(binary.machine);
  manifest->entry = kImageBinary;
  manifest->glibc = GlibcVersionNeeded(binary);

  std::vector<TarEntry> entries;
  auto add = [&](const std::string& path, const std::string& source,
                 uint32_t mode) -> Status {
    TarEntry e;
    e.path = path;
    e.mode = mode;
    DTF_ASSIGN_OR_RETURN(e.data, ReadFileToString(source));
    DTF_ASSIGN_OR_RETURN(const std::string sha, Sha256Hex(e.data));
    manifest->files.push_back({path, e.data.size(), sha, mode});
    entries.push_back(std::move(e));
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(add(kImageBinary, options.binary, kModeExecutable));
  DTF_RETURN_IF_ERROR(
      add(binary.interpreter.substr(1), binary.interpreter, kModeExecutable));
  for (const ResolvedLibrary& lib : libraries) {
    const std::string file = fs::path(lib.name).filename().string();
    DTF_RETURN_IF_ERROR(
        add(StrCat(kImageLibDir, "/", file), lib.path, kModeFile));
    if (file.starts_with("libcudart.so")) manifest->cuda = file.substr(13);
    if (file.starts_with("libnccl.so")) manifest->nccl = file.substr(11);
  }
  std::sort(manifest->files.begin(), manifest->files.end(),
            [](const ManifestFile& a, const ManifestFile& b) {
              return a.path < b.path;
            });
  entries.push_back({kImageManifest, TarEntry::Type::kFile, kModeFile,
                     ManifestToJson(*manifest), ""});
  entries.push_back({"tmp", TarEntry::Type::kDirectory, 01777, "", ""});
  return entries;
}

// The image configuration (config.json) for one layer whose uncompressed
// digest is `diff_id`.
std::string ImageConfigJson(const PackImageOptions& options,
                            const Manifest& manifest,
                            const std::string& diff_id) {
  Json config;
  config["architecture"] = OciArchitecture(manifest.arch);
  config["os"] = "linux";
  config["config"]["Env"] = Json::array({"PATH=/usr/bin"});
  config["config"]["Entrypoint"] = Json::array({"/usr/bin/dtf"});
  config["config"]["Cmd"] = Json::array({"--help"});
  config["config"]["WorkingDir"] = "/tmp";
  config["config"]["Labels"]["org.opencontainers.image.version"] =
      options.dtf_version;
  config["rootfs"]["type"] = "layers";
  config["rootfs"]["diff_ids"] = Json::array({diff_id});
  return config.dump();
}

// The OCI image layout as one tar: oci-layout, index.json naming the image
// by `tag`, and the config, image manifest and layer blobs.
StatusOr<std::string> LayoutTar(const std::string& tag,
                                const std::string& config_json,
                                const std::string& config_digest,
                                const std::string& layer,
                                const std::string& layer_digest,
                                std::string* image_digest) {
  Json image;
  image["schemaVersion"] = 2;
  image["mediaType"] = kOciManifestType;
  image["config"] =
      Descriptor(kOciConfigType, config_digest, config_json.size());
  image["layers"] =
      Json::array({Descriptor(kOciLayerType, layer_digest, layer.size())});
  const std::string image_json = image.dump();
  DTF_ASSIGN_OR_RETURN(*image_digest, Digest(image_json));

  Json index;
  index["schemaVersion"] = 2;
  index["mediaType"] = "application/vnd.oci.image.index.v1+json";
  Json ref = Descriptor(kOciManifestType, *image_digest, image_json.size());
  ref["annotations"][kRefNameKey] = tag;
  index["manifests"] = Json::array({ref});

  std::vector<TarEntry> archive;
  archive.push_back({"oci-layout", TarEntry::Type::kFile, kModeFile,
                     R"({"imageLayoutVersion":"1.0.0"})", ""});
  archive.push_back(
      {"index.json", TarEntry::Type::kFile, kModeFile, index.dump(), ""});
  archive.push_back({BlobPath(config_digest), TarEntry::Type::kFile, kModeFile,
                     config_json, ""});
  archive.push_back({BlobPath(*image_digest), TarEntry::Type::kFile, kModeFile,
                     image_json, ""});
  archive.push_back(
      {BlobPath(layer_digest), TarEntry::Type::kFile, kModeFile, layer, ""});
  return WriteTar(std::move(archive));
}

}  // namespace

StatusOr<ImageResult> PackImage(const PackImageOptions& options) {
  if (options.binary.empty() || options.output.empty()) {
    return InvalidArgumentError("dtf pack image: no binary or no output");
  }
  DTF_ASSIGN_OR_RETURN(const ElfFile binary, ReadElfFile(options.binary));
  if (binary.interpreter.empty() || binary.interpreter[0] != '/') {
    return InvalidArgumentError(StrCat(
        options.binary, ": not an executable with an absolute PT_INTERP"));
  }
  Manifest manifest;
  DTF_ASSIGN_OR_RETURN(std::vector<TarEntry> entries,
                       LayerEntries(options, binary, &manifest));
  DTF_ASSIGN_OR_RETURN(const std::string layer_tar,
                       WriteTar(std::move(entries)));
  DTF_ASSIGN_OR_RETURN(const std::string diff_id, Digest(layer_tar));
  DTF_ASSIGN_OR_RETURN(const std::string layer, Gzip(layer_tar));
  DTF_ASSIGN_OR_RETURN(const std::string layer_digest, Digest(layer));

  ImageResult result;
  result.tag =
      options.tag.empty() ? DefaultImageTag(options.dtf_version) : options.tag;
  const std::string config_json = ImageConfigJson(options, manifest, diff_id);
  DTF_ASSIGN_OR_RETURN(const std::string config_digest, Digest(config_json));
  std::string image_digest;
  DTF_ASSIGN_OR_RETURN(const std::string tar,
                       LayoutTar(result.tag, config_json, config_digest, layer,
                                 layer_digest, &image_digest));
  const fs::path parent = fs::path(options.output).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
  }
  DTF_RETURN_IF_ERROR(WriteFileAtomically(options.output, tar));

  result.path = options.output;
  result.manifest_digest = image_digest;
  result.config_digest = config_digest;
  result.layer_digest = layer_digest;
  result.layer_size = layer.size();
  result.size = tar.size();
  result.manifest = std::move(manifest);
  return result;
}

namespace {

StatusOr<Json> ParseJsonBlob(const std::string& text, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLossError(StrCat(what, ": not a JSON object"));
  }
  return j;
}

// The blob a descriptor names, its digest and size checked.
StatusOr<std::string> ReadBlob(const std::map<std::string, std::string>& files,
                               const Json& descriptor,
                               const std::string& path) {
  if (!descriptor.is_object() || !descriptor.contains("digest") ||
      !descriptor["digest"].is_string()) {
    return DataLossError(StrCat(path, ": a descriptor without a digest"));
  }
  const std::string digest = descriptor["digest"].get<std::string>();
  if (!digest.starts_with("sha256:") || digest.size() != 71) {
    return DataLossError(StrCat(path, ": digest ", digest, " is not sha256"));
  }
  const auto it = files.find(BlobPath(digest));
  if (it == files.end()) {
    return DataLossError(StrCat(path, ": blob ", digest, " missing"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string actual, Digest(it->second));
  if (actual != digest) {
    return DataLossError(
        StrCat(path, ": blob ", digest, " holds ", actual, " instead"));
  }
  return it->second;
}

}  // namespace

bool LooksLikeTar(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[5] = {};
  const bool ok =
      ::pread(fd, magic, 5, 257) == 5 && std::string_view(magic, 5) == "ustar";
  ::close(fd);
  return ok;
}

StatusOr<ImageResult> ListImage(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string tar, ReadFileToString(path));
  DTF_ASSIGN_OR_RETURN(std::vector<TarEntry> entries, ReadTar(tar, path));
  std::map<std::string, std::string> files;
  for (TarEntry& e : entries) {
    if (e.type == TarEntry::Type::kFile) files[e.path] = std::move(e.data);
  }
  const auto index_it = files.find("index.json");
  if (index_it == files.end()) {
    return DataLossError(StrCat(path, ": no index.json (not an OCI archive)"));
  }
  DTF_ASSIGN_OR_RETURN(
      const Json index,
      ParseJsonBlob(index_it->second, StrCat(path, ": index.json")));
  if (!index.contains("manifests") || !index["manifests"].is_array() ||
      index["manifests"].size() != 1) {
    return DataLossError(StrCat(path, ": index.json names not one image"));
  }
  const Json& ref = index["manifests"][0];
  ImageResult result;
  result.path = path;
  result.size = tar.size();
  if (ref.contains("annotations") && ref["annotations"].contains(kRefNameKey)) {
    result.tag = ref["annotations"][kRefNameKey].get<std::string>();
  }
  DTF_ASSIGN_OR_RETURN(const std::string image_json,
                       ReadBlob(files, ref, path));
  result.manifest_digest = ref["digest"].get<std::string>();
  DTF_ASSIGN_OR_RETURN(const Json image,
                       ParseJsonBlob(image_json, StrCat(path, ": manifest")));
  if (!image.contains("config") || !image.contains("layers") ||
      !image["layers"].is_array()) {
    return DataLossError(
        StrCat(path, ": image manifest without config or layers"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string config_json,
                       ReadBlob(files, image["config"], path));
  (void)config_json;
  result.config_digest = image["config"]["digest"].get<std::string>();
  std::map<std::string, std::string> layer_files;
  for (const Json& layer_ref : image["layers"]) {
    DTF_ASSIGN_OR_RETURN(const std::string layer,
                         ReadBlob(files, layer_ref, path));
    result.layer_digest = layer_ref["digest"].get<std::string>();
    result.layer_size += layer.size();
    DTF_ASSIGN_OR_RETURN(const std::string layer_tar,
                         Gunzip(layer, StrCat(path, ": layer")));
    DTF_ASSIGN_OR_RETURN(std::vector<TarEntry> layer_entries,
                         ReadTar(layer_tar, StrCat(path, ": layer")));
    for (TarEntry& e : layer_entries) {
      if (e.type == TarEntry::Type::kFile)
        layer_files[e.path] = std::move(e.data);
    }
  }
  const auto manifest_it = layer_files.find(kImageManifest);
  if (manifest_it == layer_files.end()) {
    return DataLossError(
        StrCat(path, ": no ", kImageManifest, " in the image"));
  }
  DTF_ASSIGN_OR_RETURN(
      result.manifest,
      ParseManifest(manifest_it->second, StrCat(path, ": ", kImageManifest)));
  for (const ManifestFile& file : result.manifest.files) {
    const auto it = layer_files.find(file.path);
    if (it == layer_files.end()) {
      return DataLossError(StrCat(path, ": ", file.path, " missing"));
    }
    DTF_ASSIGN_OR_RETURN(const std::string sha, Sha256Hex(it->second));
    if (sha != file.sha256 || it->second.size() != file.size) {
      return DataLossError(
          StrCat(path, ": ", file.path, " does not match the manifest"));
    }
  }
  return result;
}

}  // namespace dtf::pack
