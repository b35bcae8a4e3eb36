#include "lib/kernels/collective_wait.h"

#include <thread>

#include "lib/base/strings.h"

namespace dtf::kernels {
namespace {

using WaitClock = std::chrono::steady_clock;

// Polls back to back at first (a collective of a healthy run ends within
// micro- to milliseconds), then every 200 µs so that a long wait for a slow
// peer costs little CPU.
constexpr int kSpinPolls = 2000;
constexpr auto kPollInterval = std::chrono::microseconds(200);

std::string DurationText(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 1000 == 0) return StrCat(ms / 1000, " s");
  return StrCat(ms, " ms");
}

}  // namespace

Status WaitForComm(CommProgress& comm, WaitUntil until, std::string_view call,
                   std::string_view rank, const CollectiveLimits& limits) {
  const auto start = WaitClock::now();
  const auto deadline = start + limits.timeout;
  bool cancel_seen = false;
  WaitClock::time_point cancel_deadline;
  const auto fail = [&](absl::StatusCode code, std::string_view why) {
    comm.Abort();
    return Status(code, StrCat(call, " on ", rank, ": ", why,
                               "; the NCCL communicator was aborted"));
  };
  for (int polls = 0;; ++polls) {
    bool in_progress = false;
    if (Status st = comm.AsyncState(&in_progress); !st.ok()) {
      return fail(st.code(), Message(st));
    }
    if (!in_progress) {
      if (until == WaitUntil::kCommunicatorReady) return OkStatus();
      StatusOr<bool> done = comm.StreamDone();
      if (!done.ok()) return fail(done.status().code(), Message(done.status()));
      if (*done) return OkStatus();
    }
    const auto now = WaitClock::now();
    if (limits.cancel != nullptr && limits.cancel->load()) {
      if (!cancel_seen) {
        cancel_seen = true;
        cancel_deadline = now + limits.cancel_grace;
      }
      if (now >= cancel_deadline) {
        return fail(
            absl::StatusCode::kCancelled,
            StrCat("cancelled, the run being stopped, after ",
                   DurationText(
                       std::chrono::duration_cast<std::chrono::milliseconds>(
                           now - start)),
                   " in it"));
      }
    }
    if (now >= deadline) {
      return fail(absl::StatusCode::kDeadlineExceeded,
                  StrCat("not done within ", DurationText(limits.timeout), " (",
                         limits.timeout_name,
                         "): a peer rank died, hung or is far behind"));
    }
    if (polls < kSpinPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

}  // namespace dtf::kernels
