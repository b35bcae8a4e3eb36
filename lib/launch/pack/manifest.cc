#include "lib/launch/pack/manifest.h"

#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/pack/entry_name.h"
#include "lib/launch/pack/zip_format.h"

namespace dtf::pack {
namespace {

using Json = nlohmann::ordered_json;

Json OrNull(const std::string& s) { return s.empty() ? Json() : Json(s); }

bool IsHexDigest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Json ManifestJson(const Manifest& m) {
  Json j;
  j["format"] = m.format;
  j["kind"] = m.kind;
  j["dtf_version"] = m.dtf_version;
  j["entry"] = m.entry;
  if (m.kind == kKindEnv) {
    j["arch"] = m.arch;
    j["glibc"] = OrNull(m.glibc);
    j["cuda"] = OrNull(m.cuda);
    j["nccl"] = OrNull(m.nccl);
  } else {
    j["with_data"] = m.with_data;
  }
  Json files = Json::array();
  for (const ManifestFile& f : m.files) {
    Json e;
    e["path"] = f.path;
    e["size"] = f.size;
    e["sha256"] = f.sha256;
    e["mode"] = ModeString(f.mode);
    files.push_back(std::move(e));
  }
  j["files"] = std::move(files);
  return j;
}

}  // namespace

std::string ModeString(uint32_t mode) { return fmt::format("{:04o}", mode); }

int CompareVersions(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    uint64_t x = 0, y = 0;
    while (i < a.size() && a[i] != '.') {
      if (a[i] >= '0' && a[i] <= '9') x = x * 10 + (a[i] - '0');
      ++i;
    }
    while (j < b.size() && b[j] != '.') {
      if (b[j] >= '0' && b[j] <= '9') y = y * 10 + (b[j] - '0');
      ++j;
    }
    if (x != y) return x < y ? -1 : 1;
    if (i < a.size()) ++i;
    if (j < b.size()) ++j;
  }
  return 0;
}

std::string ManifestToJson(const Manifest& m) {
  // Entry names are UTF-8 (CheckEntryName, entry_name.h); a version read from
  // an ELF file may not be, and is written with U+FFFD for its bad bytes.
  return ManifestJson(m).dump(2, ' ', false, Json::error_handler_t::replace) +
         "\n";
}

std::string ArchiveSummaryToJson(const std::string& path,
                                 const std::string& sha256, uint64_t size,
                                 const Manifest& manifest) {
  Json j;
  j["archive"] = path;
  j["sha256"] = sha256;
  j["size"] = size;
  j["manifest"] = ManifestJson(manifest);
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

StatusOr<Manifest> ParseManifest(std::string_view json, std::string_view name) {
  Json j = Json::parse(json.begin(), json.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLossError(StrCat(name, ": not a JSON object"));
  }
  auto bad = [&](std::string_view what) {
    return DataLossError(StrCat(name, ": ", what));
  };
  auto string_field = [&](const Json& o, const char* key, bool nullable,
                          std::string* out) -> Status {
    auto it = o.find(key);
    if (it == o.end()) return bad(StrCat("missing \"", key, "\""));
    if (nullable && it->is_null()) {
      out->clear();
      return OkStatus();
    }
    if (!it->is_string()) return bad(StrCat("\"", key, "\" is not a string"));
    *out = it->get<std::string>();
    return OkStatus();
  };
  Manifest m;
  auto format = j.find("format");
  if (format == j.end() || !format->is_number_integer()) {
    return bad("missing \"format\"");
  }
  m.format = format->get<int>();
  if (m.format != kManifestFormat) {
    return bad(StrCat("format ", m.format, " is not one this dtf reads (",
                      kManifestFormat, ")"));
  }
  DTF_RETURN_IF_ERROR(string_field(j, "kind", false, &m.kind));
  if (m.kind != kKindEnv && m.kind != kKindJob) {
    return bad(StrCat("unknown kind \"", m.kind, "\""));
  }
  DTF_RETURN_IF_ERROR(string_field(j, "dtf_version", false, &m.dtf_version));
  DTF_RETURN_IF_ERROR(string_field(j, "entry", false, &m.entry));
  if (m.kind == kKindEnv) {
    DTF_RETURN_IF_ERROR(string_field(j, "arch", false, &m.arch));
    DTF_RETURN_IF_ERROR(string_field(j, "glibc", true, &m.glibc));
    DTF_RETURN_IF_ERROR(string_field(j, "cuda", true, &m.cuda));
    DTF_RETURN_IF_ERROR(string_field(j, "nccl", true, &m.nccl));
  } else {
    auto with_data = j.find("with_data");
    if (with_data == j.end() || !with_data->is_boolean()) {
      return bad("missing \"with_data\"");
    }
    m.with_data = with_data->get<bool>();
  }
  auto files = j.find("files");
  if (files == j.end() || !files->is_array()) return bad("missing \"files\"");
  for (size_t i = 0; i < files->size(); ++i) {
    const Json& e = (*files)[i];
    const std::string where = StrCat("files[", i, "]");
    if (!e.is_object()) return bad(StrCat(where, " is not an object"));
    ManifestFile f;
    DTF_RETURN_IF_ERROR(string_field(e, "path", false, &f.path));
    if (!CheckEntryName(f.path).ok() || f.path == kManifestName) {
      return bad(
          StrCat(where, ".path \"", f.path, "\" is not a relative entry name"));
    }
    auto size = e.find("size");
    if (size == e.end() || !size->is_number_unsigned()) {
      return bad(StrCat(where, ".size is not a non-negative integer"));
    }
    f.size = size->get<uint64_t>();
    DTF_RETURN_IF_ERROR(string_field(e, "sha256", false, &f.sha256));
    if (!IsHexDigest(f.sha256)) {
      return bad(StrCat(where, ".sha256 is not 64 lowercase hex digits"));
    }
    std::string mode;
    DTF_RETURN_IF_ERROR(string_field(e, "mode", false, &mode));
    if (mode == "0755") {
      f.mode = kModeExecutable;
    } else if (mode == "0644") {
      f.mode = kModeFile;
    } else {
      return bad(
          StrCat(where, ".mode \"", mode, "\" is neither 0755 nor 0644"));
    }
    if (!m.files.empty() && m.files.back().path >= f.path) {
      return bad(
          StrCat(where, ".path \"", f.path, "\" is out of order or repeated"));
    }
    m.files.push_back(std::move(f));
  }
  return m;
}

}  // namespace dtf::pack
