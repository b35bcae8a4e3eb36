// libFuzzer target for ParseManifest, the reader of manifest.json in dtf's
// archives (docs/pack.md). An error must be DataLoss naming the manifest; a
// parsed manifest must hold what manifest.h promises (a known kind, files
// sorted by a valid relative entry name, 0755/0644 modes, hex digests) and
// must write (ManifestToJson) to JSON that parses back to the same manifest
// and writes again to the same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lib/launch/pack/entry_name.h"
#include "lib/launch/pack/manifest.h"

namespace {

using dtf::pack::Manifest;
using dtf::pack::ManifestFile;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "pack_manifest_fuzz: %s\n", what);
  std::abort();
}

bool SameFile(const ManifestFile& a, const ManifestFile& b) {
  return a.path == b.path && a.size == b.size && a.sha256 == b.sha256 &&
         a.mode == b.mode;
}

bool Same(const Manifest& a, const Manifest& b) {
  if (a.format != b.format || a.kind != b.kind ||
      a.dtf_version != b.dtf_version || a.entry != b.entry ||
      a.files.size() != b.files.size()) {
    return false;
  }
  if (a.kind == dtf::pack::kKindEnv) {
    if (a.arch != b.arch || a.glibc != b.glibc || a.cuda != b.cuda ||
        a.nccl != b.nccl) {
      return false;
    }
  } else if (a.with_data != b.with_data) {
    return false;
  }
  for (size_t i = 0; i < a.files.size(); ++i) {
    if (!SameFile(a.files[i], b.files[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto m = dtf::pack::ParseManifest(json, "fuzz.zip: manifest.json");
  if (!m.ok()) {
    Check(m.status().code() == dtf::StatusCode::kDataLoss,
          "error is not DataLoss");
    Check(dtf::Message(m.status()).rfind("fuzz.zip: manifest.json: ", 0) == 0,
          "error does not name the manifest");
    return 0;
  }
  Check(m->kind == dtf::pack::kKindEnv || m->kind == dtf::pack::kKindJob,
        "unknown kind");
  for (size_t i = 0; i < m->files.size(); ++i) {
    const ManifestFile& f = m->files[i];
    Check(dtf::pack::CheckEntryName(f.path).ok(),
          "file path is not an entry name");
    Check(f.path != "manifest.json", "manifest lists itself");
    Check(i == 0 || m->files[i - 1].path < f.path, "files out of order");
    Check(f.mode == 0755 || f.mode == 0644, "bad mode");
    Check(f.sha256.size() == 64, "bad digest");
  }
  const std::string written = dtf::pack::ManifestToJson(*m);
  auto again = dtf::pack::ParseManifest(written, "again");
  if (!again.ok()) {
    std::fprintf(stderr, "pack_manifest_fuzz: %s\n",
                 again.status().ToString().c_str());
  }
  Check(again.ok(), "written manifest does not parse");
  Check(Same(*m, *again), "written manifest reads differently");
  Check(dtf::pack::ManifestToJson(*again) == written,
        "written manifest writes back differently");
  return 0;
}
