#include "lib/runtime/cluster/coordinator_service.h"

#include <time.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"

namespace dtf::runtime {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds PositionHeartbeatDelay(int workers) {
  return std::max(std::chrono::milliseconds(100),
                  std::chrono::milliseconds(10) * std::max(workers, 0));
}

std::chrono::milliseconds HeartbeatPeriod(
    std::chrono::seconds heartbeat_timeout) {
  return std::clamp<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat_timeout) /
          3,
      std::chrono::milliseconds(100), std::chrono::seconds(1));
}

std::chrono::milliseconds PositionWait(int workers) {
  return std::max(
      std::chrono::milliseconds(500),
      PositionHeartbeatDelay(workers) + std::chrono::milliseconds(200));
}

CoordinatorService::CoordinatorService(
    rpc::RunCredentials credentials,
    std::vector<std::pair<std::string, std::string>> tasks)
    : credentials_(std::move(credentials)), start_(Clock::now()) {
  for (auto& [name, address] : tasks) {
    tasks_[name].address = address;
    tasks_[name].last_heartbeat = start_;
    order_.push_back(name);
    if (IsTaskOf(name, Role::kWorker)) ++workers_;
  }
  shards_ = InputShardTable(workers_);
  unread_told_.assign(size_t(workers_), false);
  release_asked_.assign(size_t(workers_), start_);
}

namespace {

// CPU nanoseconds the calling thread has used.
int64_t ThreadCpuNanos() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* context,
                                           const rpc::HeartbeatRequest* request,
                                           rpc::HeartbeatResponse* response) {
  const int64_t cpu = ThreadCpuNanos();
  grpc::Status st = HandleHeartbeat(context, request, response);
  heartbeat_cpu_ns_ += ThreadCpuNanos() - cpu;
  ++heartbeats_;
  return st;
}

grpc::Status CoordinatorService::HandleHeartbeat(
    grpc::ServerContext* context, const rpc::HeartbeatRequest* request,
    rpc::HeartbeatResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok())
    return st;
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "Heartbeat");
      !st.ok())
    return st;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(request->task());
  if (it == tasks_.end()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "unknown task " + request->task());
  }
  const auto& p = request->input_position();
  const std::optional<InputPosition> position =
      PositionFromNumbers(std::span<const int64_t>(p.data(), size_t(p.size())));
  if (p.size() != 0 && !position) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        StrCat(request->task(), ": an input position of ", p.size(),
               " numbers (epoch, file, record, epoch_record, emitted: 5)"));
  }
  const std::optional<TaskState> state = ParseTaskState(request->state());
  if (!state) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        StrCat(request->task(), ": unknown state \"", request->state(), "\""));
  }
  Task& t = it->second;
  const auto now = Clock::now();
  // Heard again after a silence (the network between the hosts was cut):
  // whatever held its steps up meanwhile is not its own stall.
  const bool after_silence = t.heard && now - t.last_heartbeat >= kHeardWithin;
  t.last_heartbeat = now;
  // Kept even from a process the watchdog took for dead: the steps it
  // reported are in the variables all the same.
  if (position) t.position = *position;
  t.heard = true;
  if (request->incarnation() != t.incarnation) {
    // Another process of the task (a restart): watched anew.
    if (t.ReplacesOneThatStepped(request->incarnation())) t.replaced = true;
    t.incarnation = request->incarnation();
    t.stalled = false;
    t.watched = false;
  }
  response->set_shutdown(ended_);
  response->set_stop_training(stop_training_);
  if (t.stalled) {
    response->set_stalled(true);
    t.told = true;
    return grpc::Status::OK;
  }
  t.state = *state;
  t.step = request->step();
  t.loss = request->loss();
  t.examples_per_sec = request->examples_per_sec();
  t.rss_bytes = request->rss_bytes();
  if (t.state != TaskState::kRunning) {
    t.watched = false;
  } else if (!t.watched || request->steps_done() != t.steps_done) {
    t.watched = true;
    t.progress_at = now;
    t.window_from = now;
  } else if (after_silence) {
    t.window_from = now;
  }
  t.steps_done = request->steps_done();
  AnswerInputShards(*request, response);
  heard_.notify_all();
  return grpc::Status::OK;
}

void CoordinatorService::Watch(std::string self,
                               std::chrono::milliseconds stall_timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  watch_self_ = std::move(self);
  stall_timeout_ = stall_timeout;
}

void CoordinatorService::PauseWatch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pauses_++ == 0) paused_at_ = Clock::now();
}

void CoordinatorService::ResumeWatch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pauses_ == 0 || --pauses_ > 0) return;
  // The pause's time does not count: each window moves on by the part of
  // the pause it had begun before.
  const auto now = Clock::now();
  for (auto& [name, t] : tasks_) {
    t.window_from += now - std::max(paused_at_, std::min(t.window_from, now));
  }
}

std::vector<CoordinatorService::Stall> CoordinatorService::CheckStalls() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Stall> found;
  if (stall_timeout_.count() <= 0 || pauses_ > 0) return found;
  const auto now = Clock::now();
  for (const std::string& name : order_) {
    Task& t = tasks_.at(name);
    if (name == watch_self_ || !IsTaskOf(name, Role::kWorker)) continue;
    if (t.stalled || !t.watched || t.state != TaskState::kRunning) continue;
    // A silent worker is not one whose steps stall while it beats: it is
    // cut off or gone (train.heartbeat_timeout's business).
    if (now - t.last_heartbeat >= kHeardWithin) continue;
    if (now - t.window_from < stall_timeout_) continue;
    t.stalled = true;
    t.told = false;
    t.state = TaskState::kStalled;
    found.push_back(
        {name, t.step, t.steps_done,
         std::chrono::duration<double>(now - t.progress_at).count()});
  }
  return found;
}

int CoordinatorService::UntoldStalled() const {
  std::lock_guard<std::mutex> lock(mu_);
  int untold = 0;
  for (const auto& [name, t] : tasks_) {
    if (t.stalled && !t.told) ++untold;
  }
  return untold;
}

std::vector<std::string> CoordinatorService::SilentWorkers(
    const std::string& self, std::chrono::seconds timeout) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> silent;
  const auto now = Clock::now();
  for (const std::string& name : order_) {
    const Task& t = tasks_.at(name);
    if (name == self || !IsTaskOf(name, Role::kWorker) || !t.heard) continue;
    if (t.state == TaskState::kDone || t.state == TaskState::kFailed) continue;
    if (now - t.last_heartbeat >= timeout) silent.push_back(name);
  }
  return silent;
}

std::vector<std::string> CoordinatorService::ReplacedWorkers(
    const std::string& self) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> replaced;
  for (const std::string& name : order_) {
    if (name != self && tasks_.at(name).replaced) replaced.push_back(name);
  }
  return replaced;
}

std::vector<std::optional<InputPosition>> CoordinatorService::WorkerPositions(
    int64_t step, std::chrono::milliseconds wait) const {
  std::unique_lock<std::mutex> lock(mu_);
  // Not waited for: a worker silent for a few heartbeats, and one whose
  // steps have not advanced for a second (its last report has its last
  // position: waiting for the chief, frozen, or waiting for a PS).
  const auto now = Clock::now();
  const auto heard_since = now - kHeardWithin;
  const auto stepped_since = now - std::chrono::seconds(1);
  const std::string chief = TaskName{Role::kWorker, 0}.ToString();
  heard_.wait_for(lock, wait, [&] {
    for (const auto& [name, t] : tasks_) {
      if (!IsTaskOf(name, Role::kWorker) || name == chief) continue;
      if (!t.heard || t.stalled || t.last_heartbeat < heard_since) continue;
      if (t.state == TaskState::kRunning) {
        if (!t.watched || t.progress_at < stepped_since) continue;
      } else if (t.state != TaskState::kStarting) {
        continue;
      }
      if (t.step < step) return false;
    }
    return true;
  });
  std::vector<std::optional<InputPosition>> positions;
  for (const auto& [name, t] : tasks_) {
    if (!IsTaskOf(name, Role::kWorker)) continue;
    StatusOr<TaskName> task = ParseTaskName(name);
    if (!task.ok()) continue;
    const size_t index = static_cast<size_t>(task->index);
    if (positions.size() <= index) positions.resize(index + 1);
    positions[index] = t.position;
  }
  return positions;
}

grpc::Status CoordinatorService::Status(grpc::ServerContext* context,
                                        const rpc::StatusRequest* request,
                                        rpc::StatusResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok())
    return st;
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "Status");
      !st.ok())
    return st;
  std::lock_guard<std::mutex> lock(mu_);
  response->set_run_id(credentials_.run_id);
  response->set_global_step(global_step_);
  response->set_state(std::string(RunStateName(run_state_)));
  const auto now = Clock::now();
  // The chief is this process: its memory now, the others' as they said.
  const std::string chief = TaskName{Role::kWorker, 0}.ToString();
  for (const std::string& name : order_) {
    const Task& t = tasks_.at(name);
    rpc::TaskStatus* s = response->add_tasks();
    s->set_task(name);
    s->set_rss_bytes(name == chief ? ResidentBytes() : t.rss_bytes);
    s->set_address(t.address);
    s->set_state(std::string(TaskStateName(t.state)));
    s->set_step(t.step);
    s->set_loss(t.loss);
    s->set_examples_per_sec(t.examples_per_sec);
    s->set_seconds_since_heartbeat(
        std::chrono::duration<double>(now - t.last_heartbeat).count());
  }
  for (const auto& [k, v] : eval_) (*response->mutable_eval_metrics())[k] = v;
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CommId(grpc::ServerContext* context,
                                        const rpc::CommIdRequest* request,
                                        rpc::CommIdResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok())
    return st;
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "CommId");
      !st.ok())
    return st;
  std::lock_guard<std::mutex> lock(mu_);
  if (comm_id_.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the chief has not made the NCCL unique id yet");
  }
  response->set_id(comm_id_);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::KvSet(grpc::ServerContext* context,
                                       const rpc::KvSetRequest* request,
                                       rpc::KvSetResponse*) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok())
    return st;
  // The key and value are bounded by SetKey (InvalidArgument naming
  // which); the rest of the request as any control call's.
  if (grpc::Status st = rpc::CheckRequestSize(request->ByteSizeLong() -
                                                  request->key().size() -
                                                  request->value().size(),
                                              "KvSet");
      !st.ok())
    return st;
  if (grpc::Status st =
          CheckStoreCaller(request->task(), request->incarnation());
      !st.ok())
    return st;
  const ::dtf::Status set = SetKey(request->key(), request->value());
  if (!set.ok()) {
    return rpc::ToGrpc(::dtf::Status(
        set.code(), StrCat(request->task(), ": KvSet: ", Message(set))));
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::KvGet(grpc::ServerContext* context,
                                       const rpc::KvGetRequest* request,
                                       rpc::KvGetResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok())
    return st;
  if (grpc::Status st = rpc::CheckRequestSize(request->ByteSizeLong(), "KvGet");
      !st.ok())
    return st;
  if (grpc::Status st =
          CheckStoreCaller(request->task(), request->incarnation());
      !st.ok())
    return st;
  std::optional<std::string> value = GetKey(request->key());
  if (!value) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no rank has set the key yet");
  }
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CheckStoreCaller(const std::string& task,
                                                  uint64_t incarnation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return grpc::Status::OK;
  Task& t = it->second;
  if (incarnation != 0) {
    // Another process after one that stepped (as for a heartbeat: its
    // heartbeat may come after its first key), or after one that joined
    // this rendezvous: the ranks that read the earlier one's key wait for
    // a process that is gone.
    if (t.ReplacesOneThatStepped(incarnation) ||
        (t.store_incarnation != 0 && incarnation != t.store_incarnation)) {
      t.replaced = true;
    } else if (!t.replaced) {
      t.store_incarnation = incarnation;
    }
  }
  if (!t.replaced) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::UNAVAILABLE,
      StrCat(task,
             " is another process than the one that stepped with this chief, "
             "whose ranks met without it: it waits for the next chief"));
}

Status CoordinatorService::SetKey(const std::string& key,
                                  std::string_view value) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return InvalidArgumentError(
        StrCat("a key of ", key.size(), " bytes (1 to ", kMaxKeyBytes, ")"));
  }
  if (value.size() > kMaxValueBytes) {
    return InvalidArgumentError(StrCat("the value of ", key, " has ",
                                       value.size(), " bytes (at most ",
                                       kMaxValueBytes, ")"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!kv_.contains(key) && kv_.size() >= kMaxKeys) {
    return ResourceExhaustedError(StrCat("the store holds ", kv_.size(),
                                         " keys already (at most ", kMaxKeys,
                                         ")"));
  }
  kv_[key] = std::string(value);
  return OkStatus();
}

std::optional<std::string> CoordinatorService::GetKey(
    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

void CoordinatorService::SetCommId(std::string id) {
  std::lock_guard<std::mutex> lock(mu_);
  comm_id_ = std::move(id);
}

void CoordinatorService::Update(const std::string& task, TaskState state,
                                int64_t step, double loss,
                                double examples_per_sec) {
  std::lock_guard<std::mutex> lock(mu_);
  Task& t = tasks_[task];
  if (t.stalled) return;
  t.state = state;
  t.step = step;
  t.loss = loss;
  t.examples_per_sec = examples_per_sec;
  t.last_heartbeat = Clock::now();
  t.heard = true;
}

void CoordinatorService::SetRunState(RunState state, int64_t global_step) {
  std::lock_guard<std::mutex> lock(mu_);
  run_state_ = state;
  global_step_ = global_step;
}

void CoordinatorService::SetEvalMetrics(
    const std::vector<std::pair<std::string, double>>& m) {
  std::lock_guard<std::mutex> lock(mu_);
  eval_ = m;
}

void CoordinatorService::StopTraining() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_training_ = true;
}

void CoordinatorService::EndRun() {
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
}

std::vector<std::string> CoordinatorService::RunningWorkers(
    const std::string& self, std::chrono::seconds timeout,
    std::chrono::seconds start_within) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> running;
  const auto now = Clock::now();
  for (const auto& [name, t] : tasks_) {
    if (name == self || !IsTaskOf(name, Role::kWorker)) continue;
    if (t.state == TaskState::kDone || t.state == TaskState::kFailed ||
        t.stalled) {
      continue;
    }
    // A reserved slot not started (ReserveWorkers) is not waited for.
    if (t.NotStarted() ||
        (!t.heard ? now - start_ >= std::max(start_within, timeout)
                  : now - t.last_heartbeat >= timeout)) {
      continue;
    }
    running.push_back(name);
  }
  return running;
}

Status WatchWorkers(CoordinatorService& coordinator, const std::string& self,
                    const TrainSpec& train,
                    const std::function<void(std::string_view)>& note) {
  const bool allreduce = train.mode == TrainMode::kAllreduce;
  Status why;
  for (const CoordinatorService::Stall& s : coordinator.CheckStalls()) {
    const std::string text = StrCat(
        s.task, " has finished no step for ", fmt::format("{:.0f}", s.seconds),
        " s (stuck at global step ", s.step, ", ", s.steps_done,
        " steps done) though its heartbeats come: taken for dead "
        "(train.stall_timeout = ",
        train.stall_timeout, " s)");
    if (!allreduce) {
      if (note) note(StrCat(text, "; told it to exit"));
    } else if (why.ok()) {
      why = absl::AbortedError(ToAbsl(StrCat(
          text, "; an allreduce run cannot go on without it: the run fails")));
    }
  }
  if (allreduce && why.ok()) {
    const std::vector<std::string> silent = coordinator.SilentWorkers(
        self, std::chrono::seconds(train.heartbeat_timeout));
    if (!silent.empty()) {
      why = absl::AbortedError(ToAbsl(
          StrCat(silent.front(), " has sent no heartbeat for ",
                 train.heartbeat_timeout,
                 " s (train.heartbeat_timeout); an allreduce run cannot go on "
                 "without it: the run fails")));
    }
  }
  if (allreduce && why.ok()) {
    // A rank whose process was replaced (its pod, by the cluster's Job
    // controller) before its heartbeats stopped for long: the collective
    // the others wait in has lost it all the same.
    const std::vector<std::string> replaced = coordinator.ReplacedWorkers(self);
    if (!replaced.empty()) {
      why = absl::AbortedError(ToAbsl(StrCat(
          replaced.front(),
          " is another process now (started again after it had stepped or "
          "joined the ranks' rendezvous): "
          "its rank in the collective is gone, and an allreduce run cannot go "
          "on without it: the run fails")));
    }
  }
  return why;
}

std::unique_ptr<rpc::Coordinator::Stub> NewChiefStub(
    const std::string& chief, const rpc::RunCredentials& creds) {
  return rpc::Coordinator::NewStub(
      rpc::MakeChannel(chief, rpc::ForTask(creds, rpc::kChiefTask)));
}

StatusOr<std::string> FetchCommId(const std::string& chief,
                                  const rpc::RunCredentials& credentials,
                                  const std::string& task,
                                  std::chrono::seconds timeout,
                                  const std::atomic<bool>* cancel) {
  std::unique_ptr<rpc::Coordinator::Stub> stub =
      NewChiefStub(chief, credentials);
  rpc::CommIdRequest request;
  request.set_task(task);
  const auto deadline = Clock::now() + timeout;
  Status last;
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      return CancelledError(
          StrCat(task, ": stopped while waiting for the NCCL unique id"));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) break;
    auto context = rpc::MakeClientContext(
        credentials,
        std::min<std::chrono::milliseconds>(left, std::chrono::seconds(5)));
    rpc::CommIdResponse response;
    last = rpc::FromGrpc(stub->CommId(context.get(), request, &response),
                         StrCat("the chief (", chief, "): CommId"));
    if (last.ok()) return response.id();
    if (last.code() != StatusCode::kUnavailable &&
        last.code() != StatusCode::kDeadlineExceeded) {
      return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return DeadlineExceededError(
      StrCat(task, ": no NCCL unique id from the chief (", chief, ") within ",
             timeout.count(),
             " s (train.coordinator_timeout); last: ", Message(last)));
}

}  // namespace dtf::runtime
