#include "lib/runtime/serve/serve.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "lib/data/job_toml.h"
#include "lib/rpc/call.h"
#include "lib/rpc/server.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/cluster/listen_address.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/ps/ps_service.h"
#include "lib/runtime/train/allreduce_worker.h"
#include "lib/runtime/train/worker.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long an interrupted PS keeps serving for the chief's last checkpoint.
constexpr std::chrono::seconds kInterruptedPsGrace(10);
// How long a task that must end (its steps stalled, or an allreduce run
// failing) gives its training thread to return before it is abandoned.
constexpr std::chrono::seconds kAbandonGrace(2);

// How soon after a training step a worker sends its step and input
// position (rather than with its next heartbeat a second on): the chief's
// checkpoints wait about this long for the positions of their step.
constexpr std::chrono::milliseconds kPositionHeartbeat(100);

// A number that tells this process of a task from the others (a restart).
uint64_t NewIncarnation() {
  std::random_device random;
  return (uint64_t(random()) << 32) ^ uint64_t(random()) ^
         uint64_t(Clock::now().time_since_epoch().count());
}

std::string Port(const std::string& address) {
  return address.substr(address.rfind(':') + 1);
}

// Heartbeats to the chief once a second from a background thread, and
// kPositionHeartbeat after the last one once a training step finished
// since (a training worker: about ten a second). Sets
// `stop` when the chief says the run is over, `stop_training` when it
// stopped training early, `stalled` when its watchdog took this process for
// dead, `lost` (and `stop`) when it has been unreachable for `timeout`.
class Heartbeat {
 public:
  Heartbeat(const std::string& chief, rpc::RunCredentials creds,
            std::string task, std::chrono::seconds timeout)
      : stub_(NewChiefStub(chief, creds)),
        creds_(std::move(creds)),
        task_(std::move(task)),
        timeout_(timeout),
        incarnation_(NewIncarnation()),
        thread_([this] { Run(); }) {}
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      exit_ = true;
      // A call in flight (to a chief that went away) ends now, not at its
      // deadline.
      if (call_ != nullptr) call_->TryCancel();
    }
    cv_.notify_all();
    thread_.join();
  }
  void Set(const std::string& state, int64_t step, double loss, double eps) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = state;
    step_ = step;
    loss_ = loss;
    eps_ = eps;
  }
  // The training loop's steps (TrainHooks::on_step): the task is running,
  // its input at `position`.
  void Steps(int64_t steps_done, int64_t global_step,
             const InputPosition& position) {
    std::vector<int64_t> at = {position.epoch, position.file, position.record,
                               position.epoch_record};
    std::lock_guard<std::mutex> lock(mu_);
    state_ = "running";
    step_ = global_step;
    // The first call (the loop starts) or a step finished: send it soon.
    const bool news = position_.empty() || steps_done != steps_done_;
    position_ = std::move(at);
    steps_done_ = steps_done;
    if (!news) return;
    if (!stepped_) {
      stepped_ = true;
      cv_.notify_all();
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<bool> stop_training{false};
  std::atomic<bool> stalled{false};
  std::atomic<bool> lost{false};
  // The last call failed: the chief does not answer now.
  std::atomic<bool> failing{false};

 private:
  void Run() {
    auto last_ok = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!exit_) {
      rpc::HeartbeatRequest request;
      request.set_task(task_);
      request.set_state(state_);
      request.set_step(step_);
      request.set_loss(loss_);
      request.set_examples_per_sec(eps_);
      request.set_incarnation(incarnation_);
      request.set_steps_done(steps_done_);
      for (const int64_t p : position_) request.add_input_position(p);
      stepped_ = false;
      const auto sent = Clock::now();
      auto context = rpc::MakeClientContext(creds_, std::chrono::seconds(5));
      call_ = context.get();
      lock.unlock();
      rpc::HeartbeatResponse response;
      grpc::Status st = stub_->Heartbeat(context.get(), request, &response);
      lock.lock();
      call_ = nullptr;
      failing = !st.ok();
      if (st.ok()) {
        last_ok = Clock::now();
        if (response.shutdown()) stop = true;
        if (response.stop_training()) stop_training = true;
        if (response.stalled()) stalled = true;
      } else if (Clock::now() - last_ok > timeout_) {
        lost = true;
        stop = true;
      }
      cv_.wait_until(lock, sent + std::chrono::seconds(1),
                     [&] { return exit_ || stepped_; });
      if (stepped_) {
        cv_.wait_until(lock, sent + kPositionHeartbeat, [&] { return exit_; });
      }
    }
  }

  std::unique_ptr<rpc::Coordinator::Stub> stub_;
  rpc::RunCredentials creds_;
  std::string task_;
  std::chrono::seconds timeout_;
  const uint64_t incarnation_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool exit_ = false;
  grpc::ClientContext* call_ = nullptr;  // the call in flight, under mu_
  std::string state_ = "starting";
  int64_t step_ = 0;
  int64_t steps_done_ = 0;
  // InputPosition's four numbers; empty before the training loop starts.
  std::vector<int64_t> position_;
  bool stepped_ = false;  // a step finished since the last heartbeat
  double loss_ = 0, eps_ = 0;
  std::thread thread_;
};

}  // namespace

std::string JobFingerprint(const JobFile& job) {
  const TrainSpec& t = job.train;
  const std::string text = StrCat(
      job.model ? ModelDefinitionToToml(job) : "",
      "\nbatch_size=", t.batch_size, " epochs=", t.epochs, " steps=", t.steps,
      " seed=", t.seed, " mode=", TrainModeName(t.mode));
  return fmt::format("{:08x}", crc32c::Value(text));
}

StatusOr<TrainResult> Serve(const JobFile& job, const ServeOptions& options) {
  const bool ps_role = options.role == TaskRole::kPs;
  const std::string task = StrCat(ps_role ? "ps:" : "worker:", options.index);
  const std::vector<std::string>& own = ps_role ? options.ps : options.workers;
  if (options.index < 0 || options.index >= int(own.size())) {
    return InvalidArgumentError(StrCat(task, ": the cluster has ", own.size(),
                                       ps_role ? " ps" : " workers", " tasks"));
  }
  if (options.workers.empty()) {
    return InvalidArgumentError("the cluster has no workers");
  }
  const bool allreduce = job.train.mode == TrainMode::kAllreduce;
  if (ps_role && allreduce) {
    return InvalidArgumentError(StrCat(
        task, ": the job trains with mode = \"", TrainModeName(job.train.mode),
        "\", which has no parameter servers; start only workers"));
  }
  const bool chief = !ps_role && options.index == 0;
  const std::string address = own[size_t(options.index)];
  rpc::RunCredentials creds = options.credentials;
  creds.job = JobFingerprint(job);

  std::unique_ptr<PsService> ps_service;
  std::unique_ptr<CoordinatorService> coordinator;
  grpc::ServerBuilder builder;
  int bound_port = 0;
  StatusOr<ListenAddress> resolved = ResolveListenAddress(address);
  if (!resolved.ok()) {
    return Status(resolved.status().code(),
                  ToAbsl(StrCat(task, ": ", Message(resolved.status()))));
  }
  const ListenAddress listen = *std::move(resolved);
  if (!listen.note.empty() && (ps_role || chief) && options.on_note) {
    options.on_note(StrCat(task, ": ", listen.note));
  }
  rpc::ServerLimits limits;
  // A stream per worker to each PS, and the calls of every task to the
  // chief's Coordinator, each holding a thread while open.
  limits.max_threads =
      std::max<int>(64, 4 * int(options.ps.size() + options.workers.size()));
  // Each server carries one service, whose methods bound what a caller
  // may send: tensors to a PS, small reports to the chief.
  limits.max_receive_bytes =
      ps_role ? rpc::kPsMaxRequestBytes : rpc::kCoordinatorMaxRequestBytes;
  rpc::ConfigureServer(&builder, listen.address, creds, limits, &bound_port);
  if (ps_role) {
    PsOptions po;
    po.index = options.index;
    po.num_ps = int(options.ps.size());
    po.num_workers = int(options.workers.size());
    po.credentials = creds;
    po.threads = options.threads > 0 ? options.threads : 1;
    if (options.restore) {
      // Only this run's own checkpoint: never one an earlier run left in
      // the output directory.
      std::string why;
      DTF_ASSIGN_OR_RETURN(std::optional<Bundle> own,
                           FindRunCheckpoint(job.train.output_dir, creds.run_id,
                                             CheckpointFingerprint(job), &why));
      if (own) {
        po.restore_from = own->path();
      } else {
        StrAppend(&why, "; starting from the initial values");
      }
      if (options.on_note) options.on_note(StrCat(task, ": ", why));
    }
    DTF_ASSIGN_OR_RETURN(ps_service, PsService::Create(job, po));
    builder.RegisterService(ps_service.get());
  }
  if (chief) {
    std::vector<std::pair<std::string, std::string>> tasks;
    for (size_t i = 0; i < options.ps.size(); ++i) {
      tasks.emplace_back(StrCat("ps:", i), options.ps[i]);
    }
    for (size_t i = 0; i < options.workers.size(); ++i) {
      tasks.emplace_back(StrCat("worker:", i), options.workers[i]);
    }
    coordinator = std::make_unique<CoordinatorService>(creds, tasks);
    builder.RegisterService(coordinator.get());
  }
  // Only parameter servers and the chief serve RPCs; other workers only
  // call out.
  std::unique_ptr<grpc::Server> server;
  if (ps_role || chief) {
    server = builder.BuildAndStart();
    if (server == nullptr || bound_port == 0) {
      return UnavailableError(StrCat(task, ": cannot listen on ",
                                     listen.address, " (port ", Port(address),
                                     " in use, or not an address of this "
                                     "host?)"));
    }
  }
  if (!options.ready_file.empty()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(options.ready_file, address));
  }
  std::unique_ptr<Heartbeat> heartbeat;
  if (!chief) {
    heartbeat = std::make_unique<Heartbeat>(
        options.workers[0], creds, task,
        std::chrono::seconds(job.train.coordinator_timeout));
  }
  if (coordinator) {
    coordinator->Watch(task, std::chrono::seconds(job.train.stall_timeout));
  }
  // One flag for the task to stop on: the caller's, the heartbeat's, or the
  // watchdog's.
  std::atomic<bool> stop{false};
  std::atomic<bool> watching{true};
  // Set once the training thread has returned: nothing to abandon then.
  std::atomic<bool> returned{false};
  // Why the task must end (the watchdog's verdict), once it must.
  std::mutex fatal_mu;
  Status fatal;
  auto note = [&](std::string_view text) {
    if (options.on_note) options.on_note(text);
  };
  // The verdict of the step-progress watchdog for this task, when it must
  // end: told so by the chief (a worker), or (the chief of an allreduce
  // run, whose collectives wait for every worker) a worker stalled or
  // silent. The chief of a parameter-server run only notes the stalled
  // workers: it no longer waits for them, and the PS not at all.
  auto watchdog = [&]() -> Status {
    if (heartbeat && heartbeat->stalled) {
      return absl::AbortedError(ToAbsl(StrCat(
          task, ": the chief found no step finished for ",
          job.train.stall_timeout,
          " s (train.stall_timeout) and took this worker for dead; exiting")));
    }
    if (!coordinator || stop) return OkStatus();
    Status why = WatchWorkers(*coordinator, task, job.train, note);
    if (!why.ok()) coordinator->EndRun();
    return why;
  };
  std::thread watcher([&] {
    std::optional<Clock::time_point> abandon_at;
    while (watching) {
      if ((options.cancel && options.cancel->load()) ||
          (heartbeat && heartbeat->lost.load())) {
        stop = true;
      }
      if (!abandon_at) {
        if (Status why = watchdog(); !why.ok()) {
          {
            std::lock_guard<std::mutex> lock(fatal_mu);
            fatal = why;
          }
          stop = true;
          abandon_at = Clock::now() + kAbandonGrace;
        }
      } else if (!returned && Clock::now() >= *abandon_at) {
        // The training thread did not return: frozen, or blocked in a
        // collective for good.
        std::lock_guard<std::mutex> lock(fatal_mu);
        if (options.on_abandon) options.on_abandon(fatal);
        note(Message(fatal));
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto finish = [&](StatusOr<TrainResult> result) {
    watching = false;
    watcher.join();
    heartbeat.reset();
    if (server) {
      server->Shutdown(std::chrono::system_clock::now() +
                       std::chrono::seconds(2));
    }
    return result;
  };

  if (ps_role) {
    heartbeat->Set("running", 0, 0, 0);
    note(StrCat(task, ": serving on ", address));
    // Interrupted (Ctrl-C stops every task at once), a PS serves on for a
    // while so that the interrupted chief can pull its last checkpoint; the
    // chief then sends it home. A chief that does not answer pulls nothing:
    // the PS then exits at once.
    std::optional<Clock::time_point> interrupted_until;
    while (!ps_service->WaitForShutdown(std::chrono::milliseconds(200))) {
      ps_service->Tick();
      heartbeat->Set("running", ps_service->global_step(), 0, 0);
      if (heartbeat->lost) {
        return finish(UnavailableError(
            StrCat(task, ": the chief (", options.workers[0],
                   ") has been unreachable for ", job.train.coordinator_timeout,
                   " s; exiting")));
      }
      if (heartbeat->stop) break;
      if (options.cancel && options.cancel->load()) {
        if (!interrupted_until) {
          interrupted_until = Clock::now() + kInterruptedPsGrace;
          note(StrCat(task, ": interrupted; serving up to ",
                      kInterruptedPsGrace.count(),
                      " s more for the chief's checkpoint"));
        } else if (Clock::now() >= *interrupted_until) {
          return finish(CancelledError(StrCat(task, ": interrupted")));
        }
        if (heartbeat->failing) {
          note(StrCat(task, ": interrupted, and the chief (",
                      options.workers[0], ") does not answer; exiting"));
          return finish(CancelledError(StrCat(task, ": interrupted")));
        }
      }
    }
    note(StrCat(task, ": exiting (", ps_service->shutdown_reason(), ")"));
    if (interrupted_until) {
      return finish(CancelledError(StrCat(task, ": interrupted")));
    }
    return finish(TrainResult{});
  }

  WorkerOptions wo;
  wo.index = options.index;
  wo.ps = options.ps;
  wo.workers = options.workers;
  wo.credentials = creds;
  wo.threads = options.threads;
  wo.resume = options.restore;
  wo.coordinator = coordinator.get();
  wo.on_eval = options.on_eval;
  wo.on_note = options.on_note;
  wo.on_step = [&](int64_t steps_done, int64_t global_step,
                   const InputPosition& position) {
    if (heartbeat) heartbeat->Steps(steps_done, global_step, position);
  };
  wo.on_progress = [&](const TrainProgress& p) {
    if (heartbeat)
      heartbeat->Set("running", p.step, p.loss, p.examples_per_sec);
    if (options.on_progress) options.on_progress(p);
  };
  wo.cancel = &stop;
  if (heartbeat) wo.end_training = &heartbeat->stop_training;
  StatusOr<TrainResult> result =
      allreduce ? RunAllreduceWorker(job, wo) : RunWorker(job, wo);
  returned = true;
  {
    std::lock_guard<std::mutex> lock(fatal_mu);
    if (!fatal.ok()) result = fatal;
  }
  if (heartbeat) {
    if (heartbeat->lost) {
      result = UnavailableError(
          StrCat(task, ": the chief (", options.workers[0],
                 ") has been unreachable for ", job.train.coordinator_timeout,
                 " s; exiting"));
    }
    heartbeat->Set(result.ok() ? "done" : "failed",
                   result.ok() ? result->steps : 0,
                   result.ok() ? result->loss : 0, 0);
    // Let the chief hear the final state before this task goes.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  }
  // The workers the watchdog took for dead hear it with their next
  // heartbeat (once a second), before the chief and its Coordinator go.
  if (coordinator) {
    const auto until = Clock::now() + std::chrono::seconds(3);
    while (coordinator->UntoldStalled() > 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // A failed chief ends the run; in a PS run it also sends every PS home.
  if (chief && !result.ok()) {
    coordinator->EndRun();
    if (!allreduce) {
      PsClient ps(options.ps, creds, -1, std::chrono::seconds(10));
      Status st =
          ps.Shutdown(StrCat("the chief failed: ", Message(result.status())));
      if (!st.ok()) note(StrCat("could not stop every PS: ", Message(st)));
    }
  }
  return finish(std::move(result));
}

}  // namespace dtf::runtime
