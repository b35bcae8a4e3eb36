// What one task of a distributed run is told to be (serve.h's Serve): its
// role and place in the cluster, its credentials, and what it reports and
// how it stops.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/memory_limit.h"
#include "lib/base/status.h"
#include "lib/base/task_name.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

struct ServeOptions {
  // Role::kPs or Role::kWorker (TensorFlow's chief is worker 0).
  Role role = Role::kWorker;
  int index = 0;
  std::vector<std::string> ps;       // host:port
  std::vector<std::string> workers;  // host:port; workers[0] is the chief
  rpc::RunCredentials credentials;
  // Written (atomically) with "host:port" once the server listens; empty:
  // none.
  std::string ready_file;
  int threads = 0;
  // Worker slots from this one on are reserved, not started at launch
  // (`dtf scale` starts them): the chief and the parameter servers do not
  // wait for one until it is heard from. 0: every worker started.
  int started_workers = 0;
  // An allreduce run restarted at another size: the workers taking part
  // (lib/runtime/train/allreduce_layout.h), ascending; empty: those
  // started (every one, or those below started_workers). The others are
  // not waited for.
  std::vector<int> members;
  // A task restarted mid-run, or every task of a resumed run: start from
  // this run's last checkpoint (train.output_dir/checkpoint.dtf, when this
  // run wrote it; checkpoint_files.h): a PS its shard and step, a worker
  // its input position (WorkerOptions::resume). A checkpoint of another
  // run is not used; a corrupt one, or this run's of another job
  // fingerprint, is an error naming the file.
  bool restore = false;
  // A PS: StoreOptions::save_delay_ms (tests only).
  int64_t save_delay_ms = 0;
  // A PS: the memory limit it runs under (StoreOptions::memory_limit).
  std::optional<MemoryLimit> memory_limit;
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EvalReport&)> on_eval;
  std::function<void(std::string_view)> on_note;
  const std::atomic<bool>* cancel = nullptr;
  // A task that must end (the chief's step-progress watchdog took this
  // worker for dead; the chief of an allreduce run lost a worker) is
  // stopped; when its training thread has not returned 2 s later (frozen,
  // or blocked in a collective for good), this is called from another
  // thread with why, to report it and end the process; it must not return.
  // Unset: `why` goes to on_note and the process exits with status 1.
  std::function<void(const Status& why)> on_abandon;

  // "ps:<index>" or "worker:<index>".
  TaskName name() const { return TaskName{role, index}; }
};

}  // namespace dtf::runtime
