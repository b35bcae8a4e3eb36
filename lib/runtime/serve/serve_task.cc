#include "lib/runtime/serve/serve_task.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/rpc/server.h"
#include "lib/runtime/cluster/listen_address.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long a task that must end (its steps stalled, or an allreduce run
// failing) gives its training thread to return before it is abandoned.
constexpr std::chrono::seconds kAbandonGrace(2);

std::string Port(const std::string& address) {
  return address.substr(address.rfind(':') + 1);
}

// The verdict of the step-progress watchdog for this task, when it must
// end: told so by the chief (a worker), or (the chief of an allreduce run,
// whose collectives wait for every worker) a worker stalled or silent. The
// chief of a parameter-server run only notes the stalled workers: it no
// longer waits for them, and the PS not at all.
Status Watchdog(ServeTask& t) {
  if (t.heartbeat && t.heartbeat->stalled) {
    return absl::AbortedError(ToAbsl(StrCat(
        t.task, ": the chief found no step finished for ",
        t.job.train.stall_timeout,
        " s (train.stall_timeout) and took this worker for dead; exiting")));
  }
  if (!t.coordinator || t.stop) return OkStatus();
  Status why = WatchWorkers(*t.coordinator, t.task, t.job.train,
                            [&t](std::string_view text) { t.Note(text); });
  if (!why.ok()) t.coordinator->EndRun();
  return why;
}

// The watcher thread: sets t.stop on a cancel, a lost chief or the
// watchdog's verdict; ends the process when the training thread has not
// returned kAbandonGrace after the verdict.
void WatchTask(ServeTask& t) {
  std::optional<Clock::time_point> abandon_at;
  while (t.watching) {
    if ((t.options.cancel && t.options.cancel->load()) ||
        (t.heartbeat && t.heartbeat->lost.load())) {
      t.stop = true;
    }
    if (!abandon_at) {
      if (Status why = Watchdog(t); !why.ok()) {
        {
          std::lock_guard<std::mutex> lock(t.fatal_mu);
          t.fatal = why;
        }
        t.stop = true;
        abandon_at = Clock::now() + kAbandonGrace;
      }
    } else if (!t.returned && Clock::now() >= *abandon_at) {
      // The training thread did not return: frozen, or blocked in a
      // collective for good.
      std::lock_guard<std::mutex> lock(t.fatal_mu);
      if (t.options.on_abandon) t.options.on_abandon(t.fatal);
      t.Note(Message(t.fatal));
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

ServeTask::ServeTask(const JobFile& job, const ServeOptions& options)
    : job(job),
      options(options),
      ps_role(options.role == Role::kPs),
      chief(!ps_role && options.index == 0),
      allreduce(job.train.mode == TrainMode::kAllreduce),
      task(options.name().ToString()),
      creds(options.credentials) {}

ServeTask::~ServeTask() {
  if (watcher.joinable()) (void)FinishTask(this, TrainResult{});
}

Status ServeTask::ChiefLost() const {
  return UnavailableError(StrCat(task, ": the chief (", options.workers[0],
                                 ") has been unreachable for ",
                                 job.train.coordinator_timeout, " s; exiting"));
}

Status ConfigureTaskServer(ServeTask* t, grpc::ServerBuilder* builder) {
  const ServeOptions& options = t->options;
  const std::vector<std::string>& own =
      t->ps_role ? options.ps : options.workers;
  if (options.index < 0 || options.index >= int(own.size())) {
    return InvalidArgumentError(
        StrCat(t->task, ": the cluster has ", own.size(),
               t->ps_role ? " ps" : " workers", " tasks"));
  }
  if (options.workers.empty()) {
    return InvalidArgumentError("the cluster has no workers");
  }
  if (t->ps_role && t->allreduce) {
    return InvalidArgumentError(
        StrCat(t->task, ": the job trains with mode = \"",
               TrainModeName(t->job.train.mode),
               "\", which has no parameter servers; start only workers"));
  }
  t->address = own[size_t(options.index)];
  StatusOr<ListenAddress> resolved = ResolveListenAddress(t->address);
  if (!resolved.ok()) {
    return Status(resolved.status().code(),
                  ToAbsl(StrCat(t->task, ": ", Message(resolved.status()))));
  }
  const ListenAddress listen = *std::move(resolved);
  if (!listen.note.empty() && (t->ps_role || t->chief)) {
    t->Note(StrCat(t->task, ": ", listen.note));
  }
  rpc::ServerLimits limits;
  // A stream per worker to each PS, and the calls of every task to the
  // chief's Coordinator, each holding a thread while open.
  limits.max_threads =
      std::max<int>(64, 4 * int(options.ps.size() + options.workers.size()));
  // Each server carries one service, whose methods bound what a caller
  // may send: tensors to a PS, small reports to the chief.
  limits.max_receive_bytes =
      t->ps_role ? rpc::kPsMaxRequestBytes : rpc::kCoordinatorMaxRequestBytes;
  if (!t->ps_role) limits.max_memory_bytes = rpc::kCoordinatorMaxMemoryBytes;
  t->listen_address = listen.address;
  rpc::ConfigureServer(builder, listen.address, t->creds, limits,
                       &t->bound_port);
  return OkStatus();
}

Status StartTask(ServeTask* t, grpc::ServerBuilder* builder) {
  // Only parameter servers and the chief serve RPCs; other workers only
  // call out.
  if (t->ps_role || t->chief) {
    t->server = builder->BuildAndStart();
    if (t->server == nullptr || t->bound_port == 0) {
      return UnavailableError(StrCat(
          t->task, ": cannot listen on ", t->listen_address, " (port ",
          Port(t->address), " in use, or not an address of this host?)"));
    }
  }
  if (!t->options.ready_file.empty()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(t->options.ready_file, t->address));
  }
  if (!t->chief) {
    t->heartbeat = std::make_unique<Heartbeat>(
        t->options.workers[0], t->creds, t->task,
        std::chrono::seconds(t->job.train.coordinator_timeout),
        HeartbeatPeriod(std::chrono::seconds(t->job.train.heartbeat_timeout)),
        PositionHeartbeatDelay(int(t->options.workers.size())));
    t->heartbeat->SetFreshWithin(
        std::chrono::milliseconds(t->job.train.heartbeat_timeout * 500));
  }
  if (t->coordinator) {
    t->coordinator->Watch(t->task,
                          std::chrono::seconds(t->job.train.stall_timeout));
  }
  t->watcher = std::thread([t] { WatchTask(*t); });
  return OkStatus();
}

StatusOr<TrainResult> FinishTask(ServeTask* t, StatusOr<TrainResult> result) {
  t->watching = false;
  t->watcher.join();
  t->heartbeat.reset();
  t->ps_sessions.reset();
  if (t->server) {
    t->server->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(2));
  }
  return result;
}

}  // namespace dtf::runtime
