// The chief's Coordinator: input shards handed on from workers taken for
// dead (coordinator_service.h, HandOnInput).
#include <algorithm>
#include <tuple>

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/cluster/coordinator_service.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::string WorkerName(int w) { return TaskName{Role::kWorker, w}.ToString(); }

// Worker w of a task name; -1 for another task.
int WorkerOf(const std::string& task) {
  StatusOr<TaskName> name = ParseTaskName(task);
  return name.ok() && name->role == Role::kWorker ? name->index : -1;
}

bool Before(const InputPosition& a, const InputPosition& b) {
  return std::tie(a.epoch, a.epoch_record) < std::tie(b.epoch, b.epoch_record);
}

std::string Where(const InputPosition& p) {
  return StrCat("epoch ", p.epoch + 1, ", record ", p.epoch_record);
}

}  // namespace

bool CoordinatorService::Training(int w, const Task& t) {
  // The chief's own state is said with its progress reports, the first
  // after log_every_steps; its training thread is the one that hands
  // shards on, so it trains from its start.
  if (w == 0) {
    return t.state == TaskState::kStarting || t.state == TaskState::kRunning;
  }
  return t.state == TaskState::kRunning;
}

bool CoordinatorService::TakenForDead(int w) const {
  // The chief's own shard goes with the chief: a run without it fails.
  if (w == 0) return false;
  auto it = tasks_.find(WorkerName(w));
  if (it == tasks_.end()) return false;
  const Task& t = it->second;
  if (t.state == TaskState::kDone) return false;
  // A worker that said it failed reads nothing more: waiting for its
  // heartbeats to stop first, the chief, which no longer counts it as
  // running, could end the run with its shard unread.
  if (t.stalled || t.state == TaskState::kFailed) return true;
  if (t.NotStarted()) return true;
  const auto now = Clock::now();
  if (!t.heard) {
    return now - start_ >= std::max(shard_start_within_, shard_timeout_);
  }
  return now - t.last_heartbeat >= shard_timeout_;
}

bool CoordinatorService::ShardLost(int s) const {
  const int h = shards_.holder(s);
  if (h < 0) return true;
  const auto it = tasks_.find(WorkerName(h));
  // Handed on to a process of the worker that another replaced: lost
  // with it.
  const bool other_process = it != tasks_.end() && shards_.moved(s) &&
                             shards_.incarnation(s) != 0 &&
                             it->second.incarnation != shards_.incarnation(s);
  // A holder done reads nothing more: a shard asked back from it is
  // handed on from what it committed (the shard's end) instead. So is one
  // whose holder has not said where it stopped within the shard timeout:
  // handed on and asked back before the holder looked, it never read the
  // shard, and no answer of it will come.
  const bool done_releasing = it != tasks_.end() && shards_.releasing(s) &&
                              it->second.state == TaskState::kDone;
  const bool release_unanswered =
      shards_.releasing(s) &&
      Clock::now() - release_asked_[size_t(s)] >= shard_timeout_;
  return other_process || done_releasing || release_unanswered ||
         TakenForDead(h);
}

void CoordinatorService::ReserveWorkers(int started) {
  for (int w = std::max(started, 1); w < workers_; ++w) ReserveWorker(w);
}

void CoordinatorService::ReserveWorker(int w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (w < 1) return;
  if (auto it = tasks_.find(WorkerName(w)); it != tasks_.end()) {
    it->second.reserved = true;
  }
}

void CoordinatorService::WatchInput(std::chrono::seconds timeout,
                                    std::chrono::seconds start_within) {
  std::lock_guard<std::mutex> lock(mu_);
  shard_timeout_ = timeout;
  shard_start_within_ = start_within;
}

bool CoordinatorService::HasInputToHandOn() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (shard_timeout_.count() == 0) return false;
  if (!shard_notes_.empty()) return true;
  // A parked shard waits for a live worker: while there is none, handing
  // on would only ask the parameter servers for positions again.
  const bool taker = LiveWorkerReadingFewestLocked() >= 0;
  for (int s = 0; s < shards_.shards(); ++s) {
    if (ShardLost(s) && (taker || !shards_.Parked(s))) return true;
  }
  return false;
}

int CoordinatorService::LiveWorkerReadingFewestLocked() const {
  const auto now = Clock::now();
  // Heard from within the timeout that takes a worker for dead: never
  // the one a shard is taken from.
  const auto heard_within =
      std::min<Clock::duration>(shard_timeout_, kHeardWithin);
  int to = -1;
  for (int w = 0; w < workers_; ++w) {
    const auto t = tasks_.find(WorkerName(w));
    if (t == tasks_.end()) continue;
    const Task& task = t->second;
    const bool alive =
        task.state == TaskState::kRunning && !task.stalled &&
        (w == 0 || (task.heard && now - task.last_heartbeat < heard_within));
    if (alive && (to < 0 || shards_.held(w) < shards_.held(to))) to = w;
  }
  return to;
}

std::vector<std::string> CoordinatorService::HandOnInput(
    const std::vector<std::optional<InputPosition>>& committed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> notes = std::move(shard_notes_);
  shard_notes_.clear();
  if (shard_timeout_.count() == 0) return notes;
  for (int s = 0; s < shards_.shards(); ++s) {
    if (!ShardLost(s)) continue;
    const int holder = shards_.holder(s);
    if (holder >= 0 && shards_.releasing(s)) {
      const auto h = tasks_.find(WorkerName(holder));
      if (h != tasks_.end() && h->second.state != TaskState::kDone &&
          !TakenForDead(holder)) {
        notes.push_back(StrCat(
            WorkerName(holder), " did not say where it stopped reading ",
            WorkerName(s), "'s input shard within ", shard_timeout_.count(),
            " s of being asked: it is handed on from its "
            "committed position"));
      }
    }
    if (holder >= 0) shards_.Orphan(s);
    // The later of the two positions: neither is past what the variables
    // hold, so no batch goes unread (one read again at most).
    std::optional<InputPosition> at =
        size_t(s) < committed.size() ? committed[size_t(s)] : std::nullopt;
    const auto own = tasks_.find(WorkerName(s));
    if (own != tasks_.end() && own->second.position &&
        (!at || Before(*at, *own->second.position))) {
      at = own->second.position;
    }
    const InputPosition start = at.value_or(InputPosition{});
    const bool reserved = own != tasks_.end() && own->second.NotStarted();
    const int to = LiveWorkerReadingFewestLocked();
    if (to < 0) {
      // Taken by the next live worker that asks with no shard. A reserved
      // slot's shard at the start waits for the first worker to be heard:
      // nothing to say.
      shards_.Park(s, start);
      if (!unread_told_[size_t(s)] && !reserved) {
        notes.push_back(StrCat(WorkerName(s), "'s input shard (at ",
                               Where(start),
                               ") has no live worker to read it on"));
        unread_told_[size_t(s)] = true;
      }
      continue;
    }
    shards_.Give(s, to, tasks_.at(WorkerName(to)).incarnation, start);
    unread_told_[size_t(s)] = false;
    notes.push_back(StrCat(WorkerName(s),
                           reserved ? "'s input shard (a reserved slot, not "
                                      "started) is read by "
                                    : "'s input shard is read on by ",
                           WorkerName(to), " from ", Where(start)));
  }
  return notes;
}

bool CoordinatorService::TakeParkedLocked(int w, uint64_t incarnation) {
  if (shard_timeout_.count() == 0) return false;
  int best = -1;  // its own first
  for (int s = 0; s < shards_.shards(); ++s) {
    if (shards_.Parked(s) && (best < 0 || s == w)) best = s;
  }
  if (best < 0) return false;
  const InputPosition start = *shards_.Parked(best);
  shards_.Give(best, w, incarnation, start);
  unread_told_[size_t(best)] = false;
  shard_notes_.push_back(StrCat(WorkerName(best),
                                "'s input shard is read on by ", WorkerName(w),
                                " from ", Where(start)));
  return true;
}

bool CoordinatorService::BalanceLocked(int w, uint64_t incarnation) {
  if (shard_timeout_.count() == 0) return false;
  int best = -1;  // the shard to release
  for (int s = 0; s < shards_.shards(); ++s) {
    const int h = shards_.holder(s);
    if (h < 0 || h == w || shards_.releasing(s) || shards_.held(h) < 2 ||
        ShardLost(s)) {
      continue;
    }
    // Only a worker still training answers a release.
    const auto holder = tasks_.find(WorkerName(h));
    if (holder == tasks_.end() || !Training(h, holder->second)) continue;
    // The worker's own shard first; else a shard that is not its
    // holder's own, of the holder that reads the most.
    if (s == w) {
      best = s;
      break;
    }
    if (s == h) continue;
    if (best < 0 || shards_.held(h) > shards_.held(shards_.holder(best))) {
      best = s;
    }
  }
  if (best < 0) return false;
  shard_notes_.push_back(StrCat(WorkerName(shards_.holder(best)), " releases ",
                                WorkerName(best), "'s input shard to ",
                                WorkerName(w)));
  shards_.Release(best, w, incarnation);
  release_asked_[size_t(best)] = Clock::now();
  return true;
}

void CoordinatorService::ReleasedLocked(int w, int s, const InputPosition& at) {
  if (!shards_.Released(s, w, at)) return;
  shard_notes_.push_back(StrCat(WorkerName(s), "'s input shard is read on by ",
                                WorkerName(shards_.holder(s)), " from ",
                                Where(at), " (released by ", WorkerName(w),
                                ")"));
}

void CoordinatorService::Released(const std::string& task, int shard,
                                  const InputPosition& at) {
  std::lock_guard<std::mutex> lock(mu_);
  const int w = WorkerOf(task);
  if (w >= 0) ReleasedLocked(w, shard, at);
}

void CoordinatorService::AnswerInputShards(const rpc::HeartbeatRequest& request,
                                           rpc::HeartbeatResponse* response) {
  const int w = WorkerOf(request.task());
  if (w < 0) return;
  const uint64_t incarnation = request.incarnation();
  for (const rpc::InputShard& r : request.released()) {
    const auto& n = r.position();
    const std::optional<InputPosition> at = PositionFromNumbers(
        std::span<const int64_t>(n.data(), size_t(n.size())));
    if (at) ReleasedLocked(w, r.shard(), *at);
  }
  std::optional<std::vector<InputShard>> of = shards_.Of(w, incarnation);
  if (of && of->empty() && !shards_.Pending(w, incarnation)) {
    if (TakeParkedLocked(w, incarnation)) {
      of = shards_.Of(w, incarnation);
    } else {
      BalanceLocked(w, incarnation);
    }
  }
  response->set_input_pending(shards_.Pending(w, incarnation));
  if (!of) return;
  rpc::InputShards* input = response->mutable_input();
  for (const InputShard& s : *of) {
    rpc::InputShard* out = input->add_shards();
    out->set_shard(s.shard);
    for (const int64_t n : PositionNumbers(s.start)) out->add_position(n);
    out->set_grant(s.grant);
  }
}

std::optional<std::vector<InputShard>> CoordinatorService::InputShardsOf(
    const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int w = WorkerOf(task);
  if (w < 0) return std::nullopt;
  return shards_.Of(w, 0);
}

std::vector<std::string> CoordinatorService::UnreadShards() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> notes;
  for (int s = 0; s < shards_.shards(); ++s) {
    if (shards_.holder(s) >= 0) continue;
    notes.push_back(StrCat(
        WorkerName(s),
        "'s input shard was left unread from where its worker was taken for "
        "dead: no live worker was left to read it on"));
  }
  return notes;
}

}  // namespace dtf::runtime
