// The [slurm] table of a profile with backend = "slurm" (docs/launch.md,
// "Slurm"): how the run's batch job is asked for. Every error is
// InvalidArgument "<file>:<line>:<col>: <key>: what is wrong".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/profile.h"

namespace dtf::toml_util {
class Reader;
struct Table;
}  // namespace dtf::toml_util

namespace dtf::launch::slurm {

struct SlurmProfile {
  // sbatch's --partition, --account and --constraint; "" (the default):
  // left to Slurm.
  std::string partition;
  std::string account;
  std::string constraint;
  // sbatch's --time, in Slurm's formats: "MM", "MM:SS", "HH:MM:SS", "D-HH",
  // "D-HH:MM", "D-HH:MM:SS", or "UNLIMITED"; "" (the default): the
  // partition's limit.
  std::string time_limit;
  // Nodes the job asks for; 0 (the default): as Slurm fits the tasks.
  int nodes = 0;
  // Tasks on each node; 0 (the default): --ntasks (ps + workers) alone.
  int tasks_per_node = 0;
  // GPUs each node gives the run's workers (sbatch --gpus-per-node); 0 (the
  // default): none.
  int gpus_per_node = 0;
  // Extra arguments, each one word, for sbatch (as #SBATCH lines) and srun.
  std::vector<std::string> sbatch_args;
  std::vector<std::string> srun_args;
  // Task k of a node listens on base_port + k. Default 29500.
  int base_port = 29500;
  // A directory every node sees (shared storage) holding the run
  // directories; "" (the default): the job directory's .dtf/runs, which
  // must then be shared.
  std::string run_dir;
  // "<file>:<line>:<col>" of each key read ("slurm.nodes"), for errors
  // found later.
  std::map<std::string, std::string> where;
};

// Checks the top-level keys of a backend = "slurm" profile: those other
// backends have (host, hosts, base_port, ...) are refused, naming the key
// to use instead where there is one.
Status CheckSlurmProfileKeys(const toml_util::Reader& reader,
                             const toml_util::Table& profile);

// Reads the [slurm] table of `profile` (absent: every default); a relative
// run_dir is relative to `profile_dir`.
StatusOr<SlurmProfile> ReadSlurmProfile(const toml_util::Reader& reader,
                                        const toml_util::Table& profile,
                                        std::string_view profile_dir);

// Checks a time limit in one of Slurm's formats (see time_limit); the
// message says what is wrong, without the key.
Status ValidateSlurmTimeLimit(std::string_view text);

// The [slurm] table of `profile` (Profile::table, read by the backend's
// ProfileTable); the defaults for a profile of another backend.
const SlurmProfile& SlurmTableOf(const Profile& profile);
// The same to fill in, made with the defaults when the profile has none.
SlurmProfile& MutableSlurmTable(Profile* profile);

}  // namespace dtf::launch::slurm
