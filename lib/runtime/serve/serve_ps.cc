#include "lib/runtime/serve/serve_ps.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "lib/base/host_name.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/cluster/task_state.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long an interrupted PS keeps serving for the chief's last checkpoint.
constexpr std::chrono::seconds kInterruptedPsGrace(10);

// "sync barrier: N waits, p50 X ms, p99 Y ms": how long the pulls that
// waited for a step waited (bench/scale reads it); empty without one.
std::string BarrierLine(std::vector<float> waits) {
  if (waits.empty()) return "";
  auto quantile = [&](double q) {
    const size_t k = std::min(waits.size() - 1,
                              size_t(std::ceil(q * double(waits.size())) - 1));
    std::nth_element(waits.begin(), waits.begin() + long(k), waits.end());
    return waits[k];
  };
  const float p50 = quantile(0.5);
  const float p99 = quantile(0.99);
  return fmt::format("sync barrier: {} waits, p50 {:.2f} ms, p99 {:.2f} ms",
                     waits.size(), p50, p99);
}

}  // namespace

Status AddPsService(ServeTask* t, grpc::ServerBuilder* builder) {
  const ServeOptions& options = t->options;
  PsOptions po;
  po.index = options.index;
  po.num_ps = int(options.ps.size());
  po.num_workers = int(options.workers.size());
  po.started_workers = options.started_workers;
  po.credentials = t->creds;
  po.threads = options.threads > 0 ? options.threads : 1;
  po.save_delay_ms = options.save_delay_ms;
  po.memory_limit = options.memory_limit;
  if (options.restore) {
    // Only this run's own checkpoint: never one an earlier run left in
    // the output directory.
    std::string why;
    DTF_ASSIGN_OR_RETURN(
        std::optional<Bundle> own,
        FindRunCheckpoint(t->job.train.output_dir, t->creds.run_id,
                          CheckpointFingerprint(t->job), &why));
    if (own) {
      po.restore_from = own->path();
    } else {
      StrAppend(&why, "; starting from the initial values");
    }
    t->Note(StrCat(t->task, ": ", why));
  }
  const auto start = Clock::now();
  DTF_ASSIGN_OR_RETURN(t->ps_service, PsService::Create(t->job, po));
  if (!po.restore_from.empty()) {
    t->Note(fmt::format(
        "{}: restored {} in {:.2f} s", t->task, po.restore_from,
        std::chrono::duration<double>(Clock::now() - start).count()));
  }
  if (t->creds.tls.on()) {
    // Steps over the run's mutual TLS outside gRPC (ps_tls_server.h), on
    // the host the gRPC server binds.
    StatusOr<std::unique_ptr<PsTlsServer>> sessions =
        PsTlsServer::Start(std::string(HostOfAddress(t->listen_address)),
                           t->creds.tls, t->creds, &t->ps_service->store());
    if (!sessions.ok()) {
      return Annotate(sessions.status(),
                      StrCat(t->task, ": the Session over TLS"));
    }
    t->ps_sessions = *std::move(sessions);
    t->ps_service->set_session_port(t->ps_sessions->port());
  }
  builder->RegisterService(t->ps_service.get());
  return OkStatus();
}

StatusOr<TrainResult> ServePs(ServeTask* t) {
  PsService& service = *t->ps_service;
  Heartbeat& heartbeat = *t->heartbeat;
  const std::atomic<bool>* cancel = t->options.cancel;
  heartbeat.Set(TaskState::kRunning, 0, 0, 0);
  t->Note(StrCat(t->task, ": serving on ", t->address));
  // Interrupted (Ctrl-C stops every task at once), a PS serves on for a
  // while so that the interrupted chief can pull its last checkpoint; the
  // chief then sends it home. A chief that does not answer pulls nothing:
  // the PS then exits at once.
  std::optional<Clock::time_point> interrupted_until;
  while (!service.WaitForShutdown(std::chrono::milliseconds(200))) {
    service.Tick();
    heartbeat.Set(TaskState::kRunning, service.global_step(), 0, 0);
    if (heartbeat.lost) return FinishTask(t, t->ChiefLost());
    if (heartbeat.stop) break;
    if (cancel && cancel->load()) {
      if (!interrupted_until) {
        interrupted_until = Clock::now() + kInterruptedPsGrace;
        t->Note(StrCat(t->task, ": interrupted; serving up to ",
                       kInterruptedPsGrace.count(),
                       " s more for the chief's checkpoint"));
      } else if (Clock::now() >= *interrupted_until) {
        return FinishTask(t, CancelledError(StrCat(t->task, ": interrupted")));
      }
      if (heartbeat.failing) {
        t->Note(StrCat(t->task, ": interrupted, and the chief (",
                       t->options.workers[0], ") does not answer; exiting"));
        return FinishTask(t, CancelledError(StrCat(t->task, ": interrupted")));
      }
    }
  }
  if (const std::string barrier =
          BarrierLine(service.store().barrier_waits_ms());
      !barrier.empty()) {
    t->Note(StrCat(t->task, ": ", barrier));
  }
  t->Note(StrCat(t->task, ": exiting (", service.shutdown_reason(), ")"));
  if (interrupted_until) {
    return FinishTask(t, CancelledError(StrCat(t->task, ": interrupted")));
  }
  return FinishTask(t, TrainResult{});
}

}  // namespace dtf::runtime
