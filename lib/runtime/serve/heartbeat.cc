#include "lib/runtime/serve/heartbeat.h"

#include <pthread.h>
#include <time.h>

#include <random>
#include <utility>

#include "lib/base/os.h"
#include "lib/rpc/call.h"
#include "lib/runtime/cluster/coordinator_service.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// A number that tells this process of a task from the others (a restart).
uint64_t NewIncarnation() {
  std::random_device random;
  return (uint64_t(random()) << 32) ^ uint64_t(random()) ^
         uint64_t(Clock::now().time_since_epoch().count());
}

// The shards of an answer; one with a malformed position is left out
// (read on by no one here: the chief hands it on again when this task
// ends).
std::vector<InputShard> InputShardsOf(const rpc::InputShards& input) {
  std::vector<InputShard> shards;
  for (const rpc::InputShard& s : input.shards()) {
    const auto& n = s.position();
    const std::optional<InputPosition> start = PositionFromNumbers(
        std::span<const int64_t>(n.data(), size_t(n.size())));
    if (s.shard() < 0 || !start) continue;
    shards.push_back({s.shard(), *start, s.grant()});
  }
  return shards;
}

}  // namespace

Heartbeat::Heartbeat(const std::string& chief, rpc::RunCredentials creds,
                     std::string task, std::chrono::seconds timeout,
                     std::chrono::milliseconds period,
                     std::chrono::milliseconds position_delay)
    : stub_(NewChiefStub(chief, creds)),
      creds_(std::move(creds)),
      task_(std::move(task)),
      timeout_(timeout),
      period_(period),
      position_delay_(position_delay),
      incarnation_(NewIncarnation()),
      thread_([this] { Run(); }) {}

Heartbeat::~Heartbeat() {
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

void Heartbeat::Set(TaskState state, int64_t step, double loss, double eps) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = state;
  step_ = step;
  loss_ = loss;
  eps_ = eps;
}

void Heartbeat::Steps(int64_t steps_done, int64_t global_step,
                      const InputPosition& position) {
  const auto numbers = PositionNumbers(position);
  std::vector<int64_t> at(numbers.begin(), numbers.end());
  std::unique_lock<std::mutex> lock(mu_);
  state_ = TaskState::kRunning;
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
  if (steps_done == 0) {
    cv_.wait(lock, [&] { return heard_ || exit_ || lost.load(); });
  }
}

void Heartbeat::Flush(std::chrono::milliseconds within) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto asked = Clock::now();
  stepped_ = true;
  cv_.notify_all();
  cv_.wait_until(lock, asked + within,
                 [&] { return ended_ >= asked || exit_ || lost.load(); });
}

void Heartbeat::SetFreshWithin(std::chrono::milliseconds within) {
  std::lock_guard<std::mutex> lock(mu_);
  fresh_within_ = within;
}

AssignedShards Heartbeat::InputShards() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return heard_ || exit_ || lost.load(); });
  if (fresh_within_.count() > 0 && Clock::now() - answered_ > fresh_within_) {
    // Not heard from the chief for a while: ask now, and wait for its
    // answer (or the chief lost) before reading on.
    const auto asked = Clock::now();
    stepped_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return answered_ >= asked || exit_ || lost.load(); });
  }
  // A chief lost releases nothing to this worker any more.
  if (exit_ || lost.load()) input_.pending = false;
  return input_;
}

void Heartbeat::Released(int shard, const InputPosition& at) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_.push_back({shard, at});
    stepped_ = true;  // said soon
  }
  cv_.notify_all();
}

double Heartbeat::CpuSeconds() {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(thread_.native_handle(), &clock) != 0 ||
      clock_gettime(clock, &ts) != 0) {
    return 0;
  }
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void Heartbeat::Run() {
  auto last_ok = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!exit_) {
    rpc::HeartbeatRequest request;
    request.set_task(task_);
    request.set_state(std::string(TaskStateName(state_)));
    request.set_step(step_);
    request.set_loss(loss_);
    request.set_examples_per_sec(eps_);
    request.set_incarnation(incarnation_);
    request.set_steps_done(steps_done_);
    request.set_rss_bytes(ResidentBytes());
    for (const int64_t p : position_) request.add_input_position(p);
    const size_t releases = released_.size();
    for (const InputShard& r : released_) {
      rpc::InputShard* out = request.add_released();
      out->set_shard(r.shard);
      for (const int64_t n : PositionNumbers(r.start)) out->add_position(n);
    }
    stepped_ = false;
    const auto sent = Clock::now();
    auto context = rpc::MakeClientContext(creds_, std::chrono::seconds(5));
    call_ = context.get();
    lock.unlock();
    rpc::HeartbeatResponse response;
    grpc::Status st = stub_->Heartbeat(context.get(), request, &response);
    ++sent_;
    lock.lock();
    call_ = nullptr;
    failing = !st.ok();
    ended_ = sent;
    if (st.ok()) {
      last_ok = Clock::now();
      // When the answered request left: the chief's view no older.
      answered_ = sent;
      heard_ = true;
      cv_.notify_all();
      if (response.shutdown()) stop = true;
      if (response.stop_training()) stop_training = true;
      if (response.stalled()) stalled = true;
      // The chief has the releases this request carried.
      released_.erase(released_.begin(),
                      released_.begin() + std::ptrdiff_t(releases));
      if (response.has_input()) input_.shards = InputShardsOf(response.input());
      input_.pending = response.input_pending();
    } else if (Clock::now() - last_ok > timeout_) {
      lost = true;
      stop = true;
    }
    cv_.notify_all();
    cv_.wait_until(lock, sent + period_, [&] { return exit_ || stepped_; });
    if (stepped_) {
      cv_.wait_until(lock, sent + position_delay_, [&] { return exit_; });
    }
  }
}

}  // namespace dtf::runtime
