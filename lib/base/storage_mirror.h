// A remote directory (s3://...) kept as a local one, for code that writes
// and reads a local directory (checkpoints, TensorBoard events, exported
// models): Open downloads what the remote holds, Sync uploads what changed
// locally since the last Sync and removes from the remote what this mirror
// uploaded and the local side has since removed. Files whose name starts
// with '.' (temporary files) are never uploaded; files named in
// `last_names` ("checkpoint") are uploaded after every other file of the
// same Sync, so a pointer never names a file the remote does not hold yet.
// Each uploaded file appears whole. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/storage_tree.h"

namespace dtf {

class StorageMirror {
 public:
  // Downloads `remote` into a fresh local directory.
  static StatusOr<std::unique_ptr<StorageMirror>> Open(
      const std::string& remote, std::vector<std::string> last_names = {});
  // Stops the periodic sync (without a last Sync: call Sync first).
  ~StorageMirror();

  const std::string& local_dir() const { return local_.path(); }
  const std::string& remote_dir() const { return remote_; }

  Status Sync();
  // Calls Sync every `interval` on a thread of its own until destruction;
  // a failed Sync is retried at the next tick and its error kept for
  // last_error().
  void SyncEvery(std::chrono::milliseconds interval);
  Status last_error() const;

 private:
  StorageMirror() = default;

  struct Seen {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
  };

  LocalStagingDir local_;
  std::string remote_;
  std::vector<std::string> last_names_;
  mutable std::mutex mu_;             // guards seen_ and last_error_
  std::mutex sync_mu_;                // one Sync at a time
  std::map<std::string, Seen> seen_;  // relative path -> as last uploaded
  Status last_error_;
  std::thread thread_;
  std::condition_variable wake_;
  bool stop_ = false;
};

}  // namespace dtf
