#include "lib/launch/ssh/host_link.h"

#include <algorithm>

#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

std::string LinkSeconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace

std::chrono::milliseconds ReconnectDelay(const ReconnectPolicy& policy,
                                         int attempt) {
  std::chrono::milliseconds d = policy.first_delay;
  for (int i = 1; i < attempt && d < policy.max_delay; ++i) d *= 2;
  return std::min(d, policy.max_delay);
}

bool ConnectionLost(RemoteHost& host, const Status& error) {
  if (error.ok()) return false;
  return !host.session().Connected() ||
         error.code() == StatusCode::kUnavailable ||
         error.code() == StatusCode::kDeadlineExceeded;
}

HostLink::HostLink(RemoteHost* host, std::string name, ReconnectPolicy policy)
    : host_(host), name_(std::move(name)), policy_(policy) {}

bool HostLink::Dropped(const Status& error) {
  if (state_ != State::kUp) return state_ == State::kReconnecting;
  if (!ConnectionLost(*host_, error)) return false;
  state_ = State::kReconnecting;
  dropped_at_ = Clock::now();
  next_attempt_ = dropped_at_;
  attempts_ = 0;
  last_error_ = error;
  return true;
}

HostLink::State HostLink::Tick() {
  if (state_ == State::kUp) {
    Status alive = host_->session().KeepAlive();
    if (!alive.ok()) Dropped(alive);
  }
  if (state_ == State::kReconnecting && Clock::now() >= next_attempt_) {
    Attempt();
  }
  return state_;
}

bool HostLink::AttemptNow() {
  if (state_ == State::kReconnecting) Attempt();
  return up();
}

void HostLink::Attempt() {
  Status s = host_->Reconnect();
  if (s.ok()) {
    state_ = State::kUp;
    return;
  }
  ++attempts_;
  last_error_ = s;
  const Clock::time_point now = Clock::now();
  const Clock::time_point bound = dropped_at_ + policy_.timeout;
  if (now >= bound) {
    state_ = State::kLost;
    return;
  }
  next_attempt_ = std::min(now + ReconnectDelay(policy_, attempts_), bound);
}

Status HostLink::LostError() const {
  return UnavailableError(StrCat(
      "host ", name_, " is unreachable: the SSH connection dropped and ",
      attempts_, " reconnect", attempts_ == 1 ? "" : "s", " within ",
      LinkSeconds(policy_.timeout),
      " (ssh.reconnect_timeout) failed; the last: ", Message(last_error_)));
}

}  // namespace dtf::launch
