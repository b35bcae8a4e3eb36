// libFuzzer target for launch profiles (ParseProfile, as dtf launch reads
// profiles/<env>.toml). The input is the profile's text, read as
// <tmp>/profiles/fuzz.toml with "~" the same empty directory, so a relative
// hostfile names nothing. Every error must name the profile
// ("<tmp>/profiles/fuzz.toml:<line>:<col>: ..."); a parsed profile must hold
// the ranges profile.h promises. scripts/fuzz.sh runs it with -max_len=65536:
// toml++ recurses once per nesting level.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "lib/launch/profile.h"
#include "lib/launch/slurm/slurm_profile.h"

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "profile_fuzz: %s\n", what);
  std::abort();
}

class ProfileDir {
 public:
  ProfileDir() {
    std::string dir =
        (std::filesystem::temp_directory_path() / "dtf_profile_fuzz.XXXXXX")
            .string();
    Check(::mkdtemp(dir.data()) != nullptr, "cannot make a directory");
    root_ = dir;
    path_ = dir + "/profiles/fuzz.toml";
  }
  ~ProfileDir() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }
  const std::string& path() const { return path_; }

 private:
  std::string root_;
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ProfileDir dir;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dtf::launch::ProfileOptions options;
  options.home_dir = dir.root();
  auto p = dtf::launch::ParseProfile(text, dir.path(), "fuzz", options);
  if (!p.ok()) {
    if (dtf::Message(p.status()).rfind(dir.path() + ":", 0) != 0) {
      std::fprintf(stderr, "profile_fuzz: %s\n", p.status().ToString().c_str());
      Check(false, "error does not name the profile");
    }
    return 0;
  }
  Check(p->name == "fuzz" && p->source == dir.path(), "name or source lost");
  Check(p->ps >= 1 && p->workers >= 1, "ps or workers below 1");
  Check(p->base_port >= 0 && p->base_port <= 65535, "base_port out of range");
  Check(p->threads >= 0 && p->max_restarts >= 0 && p->gpus >= 0,
        "threads, max_restarts or gpus negative");
  Check(p->backend != dtf::launch::BackendKind::kSsh || !p->hosts.empty(),
        "ssh backend without hosts");
  const dtf::launch::slurm::SlurmProfile& slurm =
      dtf::launch::slurm::SlurmTableOf(*p);
  Check(slurm.nodes >= 0 && slurm.tasks_per_node >= 0 &&
            slurm.gpus_per_node >= 0 && slurm.base_port >= 1024 &&
            slurm.base_port <= 65535,
        "[slurm] value out of range");
  Check(slurm.time_limit.empty() ||
            dtf::launch::slurm::ValidateSlurmTimeLimit(slurm.time_limit).ok(),
        "[slurm] time_limit accepted but not valid");
  Check(p->backend == dtf::launch::BackendKind::kSlurm || slurm.where.empty(),
        "[slurm] read for another backend");
  for (const dtf::launch::HostEntry& h : p->hosts) {
    Check(!h.host.empty() && h.slots >= 1, "bad host entry");
  }
  return 0;
}
