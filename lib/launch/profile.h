// Launch profiles, profiles/<env>.toml (docs/launch.md): where and how many
// tasks a run starts. A profile never holds secrets. Every error is
// InvalidArgument reading "<file>:<line>:<col>: <key>: what is wrong".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/device_name.h"
#include "lib/base/status.h"
#include "lib/launch/backend_kind.h"
#include "lib/launch/backend_part.h"
#include "lib/launch/hostfile.h"
#include "lib/launch/profile_s3.h"

namespace dtf::toml_util {
class Reader;
struct Table;
}  // namespace dtf::toml_util

namespace dtf::launch {

// profiles/local.toml as shipped: the profile used when a job directory has
// none. One PS and two workers on 127.0.0.1, ports chosen at launch.
extern const char kDefaultLocalProfile[];
// Profile::source of the built-in default.
inline constexpr char kBuiltInProfileSource[] = "<built-in local profile>";

struct Profile {
  // The name ("local" for profiles/local.toml and the built-in default) and
  // the file it was read from (kBuiltInProfileSource for the built-in one).
  std::string name;
  std::string source;
  // backend: "local" (every task on this machine), "ssh" (tasks on the
  // hosts below, reached over SSH), "slurm" (a batch job; [slurm] below) or
  // "kubernetes" (manifests of a Job or TFJob; [kubernetes] below).
  // Default "local".
  BackendKind backend = kDefaultBackend;
  // ps, workers: task counts, each >= 1. Defaults 1 and 2.
  int ps = 1;
  int workers = 2;
  // host: the address every local task binds and is reached at. Default
  // "127.0.0.1".
  std::string host = "127.0.0.1";
  // base_port: 0 chooses free ports at launch; otherwise task k (PS first,
  // then workers) gets base_port + k. Default 0.
  int base_port = 0;
  // threads: compute threads per task, 0 letting the task decide. Default 0.
  int threads = 0;
  // max_restarts: how many times a parameter server or a worker other than
  // the chief that fails is started again (a PS restoring the last
  // checkpoint). Default 0.
  int max_restarts = 0;
  // min_workers (parameter-server runs): elastic workers. A worker other
  // than the chief that fails is not started again while at least this
  // many workers (the chief among them) are left: the run goes on with
  // fewer (the sync step and replicas_to_aggregate follow the live
  // workers); below it the worker is restarted as max_restarts allows,
  // else the run ends. 0 (default): off, every failed worker is restarted
  // as max_restarts allows.
  int min_workers = 0;
  // max_workers (parameter-server runs, backends local and ssh): workers a
  // running run may grow to with `dtf scale RUN --workers N`. The plan
  // holds this many worker slots, those above `workers` reserved (host,
  // port, task directory) but not started; the input is sharded by
  // max_workers from the start, the reserved slots' shards read by the
  // running workers until a slot is started (docs/launch.md, *Elastic
  // workers*). 0 (default): the run keeps its `workers`.
  int max_workers = 0;
  // device: where workers compute, "cpu", "cuda" or "cuda:N" (docs/
  // launch.md, "GPUs"); unset: the job's train.device. Parameter servers
  // always compute on the CPU.
  std::optional<DeviceName> device;
  // gpus (backend = "local"): the GPUs of this machine the plan hands to
  // CUDA workers, one each in turn; 0 (the default): worker i gets GPU i.
  // With backend = "ssh" each host's gpus= in the hostfile says it.
  int gpus = 0;
  // backend = "ssh" only:
  // hosts = ["h1", "h2 slots=2"] (each a hostfile line) or hostfile =
  // "PATH" (relative to the profile's directory): where tasks may run.
  std::vector<HostEntry> hosts;
  std::string hostfile;  // as resolved; "" for inline hosts
  // work_dir: the directory on each host that holds shipped archives and
  // run directories; relative paths are under the login directory, and
  // "{host}" is replaced by the host's name. Default ".dtf".
  std::string work_dir = ".dtf";
  // with_data: ship the job's data with it (dtf pack zip --with-data).
  // Default false: the job's data paths must hold on every host.
  bool with_data = false;
  // [ssh]: how hosts are reached; a hostfile's user=/port= win per host.
  struct Ssh {
    std::string user;           // "": ~/.ssh/config, else the local user
    int port = 0;               // 0: ~/.ssh/config, else 22
    std::string identity_file;  // "": ssh-agent and the default keys
    std::string known_hosts;    // "": ~/.ssh/known_hosts
    std::string config;         // "": ~/.ssh/config; "none": none
    int connect_timeout = 10;   // seconds
    int keepalive = 15;         // seconds between keepalives
    // Seconds a dropped connection to a host is tried again (with
    // backoff) before the host is lost and the run fails; 0: one attempt.
    int reconnect_timeout = 30;
  } ssh;
  // tls: mutual TLS between the tasks, with certificates from a CA the
  // launcher makes for the run (docs/protocol.md, "Transport security").
  // Unset (the default): on when a task's host is not a loopback one (an
  // SSH run to real hosts), off for a run on loopback.
  std::optional<bool> tls;
  // The backend's own table, read by its ProfileTable: [slurm] (lib/
  // launch/slurm/slurm_profile.h: SlurmTableOf) or [kubernetes] (lib/
  // launch/k8s/k8s_profile.h: KubernetesTableOf); empty for local and ssh.
  BackendPart table;
  // [env]: environment variables set for every task, by name.
  std::map<std::string, std::string> env;
  // [s3]: how the run's tasks reach an S3-compatible store
  // (lib/launch/profile_s3.h).
  ProfileS3 s3;
  // "<file>:<line>:<col>" of each key read, for errors found later (a port
  // range that runs past 65535 once --ps/--workers are applied).
  std::map<std::string, std::string> where;
};

// What reading a profile takes from the environment it runs in; cmd/ fills
// it.
struct ProfileOptions {
  // The directory "~" stands for in a profile's local paths
  // (ssh.identity_file, ssh.known_hosts, ssh.config, hostfile): $HOME.
  // Default "": "~/x" reads as "/x", as with HOME unset.
  std::string home_dir;
};

// "<file>:<line>:<col>" of a profile key, or the profile's file when the
// key was not written (a default); for errors that name the key.
std::string KeyWhere(const Profile& profile, const char* key);

// What reading a profile asks of its backend: the keys it allows and its
// own table. The backends whose keys are the shared ones (local, ssh) read
// with ProfileTable itself; others override it in their own folder
// (lib/launch/slurm/slurm_profile.h, lib/launch/k8s/k8s_profile.h).
class ProfileTable {
 public:
  virtual ~ProfileTable() = default;
  // Checks that `table` (the whole profile) has no key this backend does
  // not know, naming the first, then reads the backend's own keys into
  // `profile` (its name, source and backend are set). By default: the
  // keys of a local or SSH profile, with a hint for a key of the other.
  virtual Status Read(const toml_util::Reader& reader,
                      const toml_util::Table& table, Profile* profile) const;
  // Whether the profile lists hosts of the tasks' own and how they are
  // reached (hosts, hostfile, work_dir, with_data, [ssh]); false by
  // default (a local profile's keys).
  virtual bool ReadsHosts() const;
};

// The ProfileTable of each backend (lib/launch/backends.cc has them all).
using ProfileTableFor = const ProfileTable& (*)(BackendKind kind);

// ParseProfile with the backends' tables from `tables`.
StatusOr<Profile> ParseProfileWith(std::string_view text, std::string source,
                                   std::string name,
                                   const ProfileOptions& options,
                                   ProfileTableFor tables);

// Parses profile text; `source` names it in errors, `name` becomes
// Profile::name. This and the two below read every backend's table
// (lib/launch/backends.cc).
StatusOr<Profile> ParseProfile(std::string_view text, std::string source,
                               std::string name,
                               const ProfileOptions& options = {});
// Reads and parses a profile file; its name is the file name without
// ".toml".
StatusOr<Profile> LoadProfileFile(const std::string& path,
                                  const ProfileOptions& options = {});

// The profile `arg` names, for a job file in `job_dir`: a path when it ends
// in ".toml" or holds a '/' (relative to the working directory), otherwise
// <job_dir>/profiles/<arg>.toml, falling back to kDefaultLocalProfile when
// `arg` is "local" and that file does not exist. NotFound when a named
// profile is missing.
StatusOr<Profile> ResolveProfile(const std::string& job_dir,
                                 const std::string& arg,
                                 const ProfileOptions& options = {});

}  // namespace dtf::launch
