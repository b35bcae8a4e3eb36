// The collective (collective.h) between CPU processes over Gloo's TCP
// transport: an allreduce run whose device is the CPU. Each rank listens
// on its own address (the host the plan gave its task, never every
// interface) and the ranks find each other through a KeyValueStore (in a
// run: the chief's Coordinator, lib/runtime/cluster/coordinator_store.h): each
// publishes its addresses under its rank, then reads the others'.
//
// Tensors are in host memory. AllReduceMean is Gloo's ring allreduce of the
// sum, then scaled by 1/size; Broadcast, AllGather (an allgather of the
// lengths, then allgatherv) and Barrier are Gloo's own. Every call, the
// set-up included, is bounded by CollectiveLimits::timeout (Gloo's
// timeout of the context and of each call): a peer that hung makes it
// DeadlineExceeded, a peer whose connection closed (a process that died)
// Unavailable naming that peer's rank. A cancel ends the set-up at once; a
// call that begins `cancel_grace` or more after the cancel fails at once
// (Cancelled), and one still under way then is given up (Cancelled:
// call_watch.h fails its waits, since Gloo does not wake every wait
// for a peer that died). Gloo's exceptions never leave this file: they
// become Status at the boundary. A write to a peer that has gone must fail
// the call, not end the process: the first join makes the process ignore
// SIGPIPE unless it handles it itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/collective_wait.h"

namespace dtf::kernels {

// Where the ranks of one collective meet: keys written once by one rank,
// read by the others. Thread-safe.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual Status Set(const std::string& key, std::string_view value) = 0;
  // The value of `key` once some rank has set it: waits for at most
  // `timeout` (DeadlineExceeded then, naming the key).
  virtual StatusOr<std::string> Get(const std::string& key,
                                    std::chrono::milliseconds timeout) = 0;
};

// A KeyValueStore in this process: ranks that are threads of one process
// (a run of one worker, tests).
class MemoryStore final : public KeyValueStore {
 public:
  Status Set(const std::string& key, std::string_view value) override;
  StatusOr<std::string> Get(const std::string& key,
                            std::chrono::milliseconds timeout) override;

 private:
  std::mutex mu_;
  std::condition_variable set_;
  std::map<std::string, std::string> values_;
};

// Joins the collective of `size` ranks as `rank`, listening on `host` (an
// IP address or a name of this host; no port: the system picks them), the
// addresses exchanged through `store` under keys that begin with
// `prefix`. Returns once every rank has joined, within `join_timeout` (the
// ranks may start far apart); each later call within limits.timeout.
// limits.cancel must outlive the collective. `store` is used only while
// this runs.
StatusOr<std::unique_ptr<Collective>> JoinGloo(
    KeyValueStore& store, std::string_view prefix, std::string_view host,
    int rank, int size, const CollectiveLimits& limits,
    std::chrono::milliseconds join_timeout);

}  // namespace dtf::kernels
