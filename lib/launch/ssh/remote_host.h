// One host of an SSH run, over one SSH session (lib/launch/ssh): what the
// preflight learns of it, shipping the archives, and starting, watching and
// stopping the tasks placed there. The work directory's layout on a host:
//
//   <work>/envs/<env id>/   the runtime (dtf pack env), files verified
//   <work>/jobs/<job id>/   the job (dtf pack zip), unpacked and verified
//   <work>/archives/        job archives as uploaded
//   <work>/runs/<run id>/   secret (0600), s3-credentials (0600, when the
//                           job is in an object store), metrics.json,
//                           <role>-<index>/,
//                           tls/ (0700: ca.pem and the host's tasks'
//                           certificates and keys, each 0600)
//
// An unpacked archive's directory holds ".complete" once verified; a
// directory with it is never shipped again.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/process.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/ssh/session.h"

namespace dtf::pack {
class ArchiveReader;
}  // namespace dtf::pack

namespace dtf::launch {

inline constexpr char kCompleteMarker[] = ".complete";

// The SSH target of a task's host as the plan says to reach it.
ssh::Target TargetFor(const Plan& plan, const std::string& host,
                      const std::string& user, int port);

// What a host says about itself (one remote command, POSIX sh).
struct HostFacts {
  std::string arch;               // uname -m
  std::string glibc;              // "2.36"; "" when not glibc
  std::string work_dir;           // absolute
  bool writable = false;          // the work dir could be created and written
  uint64_t free_bytes = 0;        // available in the work dir's file system
  std::vector<int> listening;     // TCP ports something listens on
  std::vector<std::string> gpus;  // nvidia-smi -L lines (or device nodes)
  // The host's clock minus ours at the middle of the call, and half the
  // call's round trip (the bound on that figure's error).
  int64_t clock_skew_ms = 0;
  int64_t clock_error_ms = 0;
};

// An archive to ship: its id (content hash), the local zip, its entries.
struct ShippedArchive {
  std::string id;
  std::string zip;
  uint64_t size = 0;
};

struct ShipReport {
  bool env_uploaded = false;
  bool job_uploaded = false;
  uint64_t bytes = 0;  // sent over SFTP
};

class RemoteHost {
 public:
  explicit RemoteHost(std::unique_ptr<ssh::Session> session,
                      std::string work_dir);

  ssh::Session& session() { return *session_; }
  const std::string& work_dir() const { return work_dir_; }
  std::string Label() const { return session_->Label(); }

  // Connects again to the same target (a dropped connection); the old
  // session is kept when that fails.
  Status Reconnect();

  StatusOr<HostFacts> Probe(std::chrono::milliseconds timeout);

  // Ships what the host does not have yet: the runtime's files into
  // envs/<id> (checked there by the shipped dtf against its manifest),
  // the job archive into archives/ and unpacked into jobs/<id>. An env
  // archive with an entry name that pack::CheckEntryName refuses is
  // refused (DataLoss "<archive>: <entry>: ...") before anything is
  // written; a failure while writing its files removes what was written.
  StatusOr<ShipReport> Ship(const ShippedArchive& env,
                            const ShippedArchive& job);

  // The run's directory and secret on this host, each task's directory,
  // and, when `tls_files` is not empty (HostTlsFiles), the run's tls/
  // directory holding them.
  // With `s3_credentials` not empty, also the run's s3-credentials file
  // beside the secret (0600).
  Status PrepareRun(const Plan& plan, const std::string& secret,
                    const std::vector<const TaskPlan*>& tasks,
                    const std::vector<TlsFile>& tls_files = {},
                    std::string_view s3_credentials = {});
  // The preflight of the job's data in an object store, from this host
  // (after PrepareRun): `dtf task check-data` of the shipped runtime with
  // `task`'s job, --set values and S3 file lists the job's s3:// records
  // and reads their first shard, and lists an s3:// output_dir.
  // FailedPrecondition naming this host and what failed there (the bucket
  // and key), as the check printed it.
  Status CheckRemoteData(const Plan& plan, const TaskPlan& task);
  // Starts a task (`dtf task exec` of the shipped runtime); its process on
  // the host. With `restart`, starts a task that failed again: its ready,
  // pid, exit and stop files are removed first, its output is appended to
  // its logs, and its command line is RestartArgv's.
  StatusOr<ProcessId> StartTask(const Plan& plan, const TaskPlan& task,
                                bool restart = false);
  // Signals the tasks (`dtf task signal`); the ones that were still there.
  StatusOr<std::vector<std::string>> SignalTasks(
      const Plan& plan, const std::vector<const TaskPlan*>& tasks, bool kill);

  // A task file's bytes from `offset` (at most `max`); nullopt when the
  // file does not exist.
  StatusOr<std::optional<std::string>> ReadAt(const std::string& path,
                                              uint64_t offset, size_t max);

 private:
  std::string Runtime(const Plan& plan, const TaskPlan& task) const;
  // Writes entry `index` of `reader` under `dir`; the bytes sent.
  StatusOr<uint64_t> WriteEntry(const pack::ArchiveReader& reader, size_t index,
                                const std::string& dir);

  std::unique_ptr<ssh::Session> session_;
  std::string work_dir_;
};

}  // namespace dtf::launch
