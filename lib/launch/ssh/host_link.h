// The SSH connection to one host of a run, kept through drops. When an
// operation on the host fails because the connection is gone (or a
// keepalive finds it gone), the link reconnects: at once, then after 0.5 s,
// 1 s, 2 s, ... (at most 8 s apart), until `timeout` has passed since the
// drop; a last attempt is made at that bound, and when it fails too the
// host is lost. The tasks on the host are detached from the session (their
// pid, ready and exit files are on the host), so they run on meanwhile and
// are found again once the link is back. Not thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/remote_host.h"

namespace dtf::launch {

struct ReconnectPolicy {
  // From the drop to the last attempt; 0: the first drop loses the host.
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds first_delay{500};
  std::chrono::milliseconds max_delay{8000};
};

// The wait after failed attempt `attempt` (1, 2, ...): first_delay doubled
// each time, at most max_delay.
std::chrono::milliseconds ReconnectDelay(const ReconnectPolicy& policy,
                                         int attempt);

// Whether `error`, from an operation on `host`, means the connection is
// gone (not that the operation itself failed).
bool ConnectionLost(RemoteHost& host, const Status& error);

class HostLink {
 public:
  enum class State { kUp, kReconnecting, kLost };
  using Clock = std::chrono::steady_clock;

  // `name` is the host as the plan names it, for messages. `host` must
  // outlive the link.
  HostLink(RemoteHost* host, std::string name, ReconnectPolicy policy);

  State state() const { return state_; }
  bool up() const { return state_ == State::kUp; }
  const std::string& name() const { return name_; }
  RemoteHost* host() const { return host_; }

  // After `error` from an operation on the host: when it is the loss of
  // the connection (ConnectionLost), the link starts reconnecting and this
  // returns true; else false (the error is the operation's own).
  bool Dropped(const Status& error);
  // An up link: a keepalive when one is due (a dead connection starts
  // reconnecting). A reconnecting one: an attempt when it is due. Returns
  // the state after that.
  State Tick();
  // A reconnecting link: one attempt now, whatever the schedule (the run is
  // ending and wants its tasks stopped). Returns whether it is up.
  bool AttemptNow();

  // Failed reconnects since the drop.
  int attempts() const { return attempts_; }
  // The error of the drop, then of the last failed attempt.
  const Status& last_error() const { return last_error_; }
  // Once lost: Unavailable naming the host, how long it was tried and the
  // last error.
  Status LostError() const;

 private:
  void Attempt();

  RemoteHost* host_;
  std::string name_;
  ReconnectPolicy policy_;
  State state_ = State::kUp;
  Clock::time_point dropped_at_;
  Clock::time_point next_attempt_;
  int attempts_ = 0;
  Status last_error_;
};

}  // namespace dtf::launch
