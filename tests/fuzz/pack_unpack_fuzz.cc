// libFuzzer target for UnpackArchive, which dtf runs on every host it ships
// a job to. Input byte 0 bit 0 clear: the rest is a zip file, unpacked as it
// is. Set: the rest is a list of entries, one a line (the first byte's low
// bit picks mode 0755 or 0644, the others are the entry's name, the line its
// contents), written with dtf's ZipWriter and a manifest that matches, then
// spoiled as bits 1-4 of byte 0 say (an unlisted entry, a wrong digest, a
// wrong mode, a listed entry that is missing), so that the fuzzer reaches
// extraction and the checks after it.
//
// Each input is unpacked into a fresh directory eight levels deep inside
// this process's temporary directory, and then that whole directory is
// scanned: anything written outside the destination aborts, as do a
// staging directory left behind, files left after a failed unpack, and an
// unpacked file that differs from its manifest entry.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/unpack.h"
#include "lib/launch/pack/zip_format.h"
#include "lib/launch/pack/zip_writer.h"

namespace {

namespace fs = std::filesystem;
using dtf::pack::Manifest;
using dtf::pack::ManifestFile;

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "pack_unpack_fuzz: %s\n", what.c_str());
  std::abort();
}

// <tmp>/dtf_unpack_fuzz.XXXXXX/
//   in.zip                 raw inputs
//   zips/                  archives written from entry lists
//   d1/.../d8/dest/        where each input is unpacked
class Sandbox {
 public:
  Sandbox() {
    std::string dir =
        (fs::temp_directory_path() / "dtf_unpack_fuzz.XXXXXX").string();
    Check(::mkdtemp(dir.data()) != nullptr, "cannot make a directory");
    root_ = dir;
    fs::path deep = root_;
    for (int i = 1; i <= 8; ++i) {
      deep /= "d" + std::to_string(i);
      skeleton_.insert(deep.string());
    }
    fs::create_directories(deep);
    dest_ = (deep / "dest").string();
    fs::create_directories(root_ / "zips");
    skeleton_.insert((root_ / "zips").string());
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string zip() const { return (root_ / "in.zip").string(); }
  std::string zips() const { return (root_ / "zips").string(); }
  const std::string& dest() const { return dest_; }

  // Every path under the root that is neither the skeleton, an input
  // archive, nor under dest: what an unpack wrote where it must not.
  std::vector<std::string> Strays() const {
    std::vector<std::string> strays;
    for (auto it = fs::recursive_directory_iterator(root_);
         it != fs::recursive_directory_iterator(); ++it) {
      const std::string p = it->path().string();
      if (p == dest_) {
        it.disable_recursion_pending();
        continue;
      }
      if (skeleton_.count(p) != 0 || p == zip()) continue;
      if (it->path().parent_path() == root_ / "zips" && it->is_regular_file() &&
          !it->is_symlink()) {
        continue;
      }
      strays.push_back(p);
    }
    return strays;
  }

  // Empties dest and zips/ for the next input.
  void Reset() const {
    std::error_code ec;
    fs::remove_all(dest_, ec);
    for (const auto& e : fs::directory_iterator(root_ / "zips")) {
      fs::remove_all(e.path(), ec);
    }
  }

 private:
  fs::path root_;
  std::string dest_;
  std::set<std::string> skeleton_;
};

bool WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return bool(out.flush());
}

// Builds an archive from the entry list in `text`; "" when nothing could be
// written.
std::string WriteEntries(std::string_view text, uint8_t spoil,
                         const Sandbox& box) {
  dtf::pack::ZipWriter zip;
  Manifest manifest;
  manifest.kind = dtf::pack::kKindJob;
  manifest.dtf_version = "fuzz";
  manifest.entry = "dtf.toml";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const uint32_t mode = (line[0] & 1) != 0 ? 0755 : 0644;
    const std::string name(line.substr(1));
    if (!zip.AddBytes(name, std::string(line), mode).ok()) continue;
    auto digest = dtf::pack::Sha256Hex(line);
    Check(digest.ok(), "sha256 failed");
    manifest.files.push_back(ManifestFile{name, line.size(), *digest, mode});
  }
  if ((spoil & 1) != 0 && !manifest.files.empty()) manifest.files.pop_back();
  if ((spoil & 2) != 0 && !manifest.files.empty()) {
    manifest.files[0].sha256[0] =
        manifest.files[0].sha256[0] == '0' ? '1' : '0';
  }
  if ((spoil & 4) != 0 && !manifest.files.empty()) {
    manifest.files[0].mode ^= 0755 ^ 0644;
  }
  if ((spoil & 8) != 0) {
    manifest.files.push_back(ManifestFile{
        "missing/file", 0, std::string(64, 'a'), dtf::pack::kModeFile});
  }
  auto written =
      dtf::pack::WriteArchive(&zip, std::move(manifest), box.zips(), "job-");
  return written.ok() ? written->archive.path : "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Sandbox box;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1,
                              size - 1);
  std::string zip;
  if ((data[0] & 1) == 0) {
    zip = box.zip();
    Check(WriteFile(zip, rest), "cannot write the archive");
  } else {
    zip = WriteEntries(rest, data[0] >> 1, box);
    if (zip.empty()) {
      box.Reset();
      return 0;
    }
  }
  auto manifest = dtf::pack::UnpackArchive(zip, box.dest());

  for (const std::string& stray : box.Strays()) {
    Check(false, "written outside the destination: " + stray);
  }
  std::set<std::string> found;
  if (fs::exists(box.dest())) {
    for (auto it = fs::recursive_directory_iterator(box.dest());
         it != fs::recursive_directory_iterator(); ++it) {
      const std::string rel =
          it->path().lexically_relative(box.dest()).generic_string();
      // A staging directory (".dtf-unpack.XXXXXX") left behind; an entry
      // of the archive may bear such a name too, and is then listed.
      if (rel.rfind(".dtf-unpack.", 0) == 0) {
        const std::string top = rel.substr(0, rel.find('/'));
        bool entry = false;
        if (manifest.ok()) {
          for (const ManifestFile& f : manifest->files) {
            entry = entry || f.path == top || f.path.rfind(top + "/", 0) == 0;
          }
        }
        Check(entry, "staging directory left behind: " + rel);
      }
      Check(!it->is_symlink(), "symbolic link unpacked: " + rel);
      if (!it->is_directory()) found.insert(rel);
    }
  }
  if (!manifest.ok()) {
    if (!found.empty()) {
      Check(false, "a failed unpack left files: " + *found.begin());
    }
    box.Reset();
    return 0;
  }
  std::set<std::string> listed;
  for (const ManifestFile& f : manifest->files) {
    listed.insert(f.path);
    const std::string path = box.dest() + "/" + f.path;
    auto digest = dtf::pack::DigestFile(path);
    Check(digest.ok() && digest->size == f.size && digest->sha256 == f.sha256,
          "unpacked file differs from the manifest: " + f.path);
    const auto perms = fs::status(path).permissions();
    Check(uint32_t(perms) == f.mode,
          "unpacked file has another mode: " + f.path);
  }
  Check(found == listed, "unpacked files differ from the manifest's list");
  box.Reset();
  return 0;
}
