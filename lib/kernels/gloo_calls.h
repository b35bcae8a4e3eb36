// Gloo's options of each call of the Gloo collective (gloo_collective.cc),
// with the buffers the call waits on, and the failing of every pair of a
// context: what giving up a call under way needs (call_watch.h), since
// Gloo has no cancel.
#pragma once

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <exception>
#include <initializer_list>
#include <memory>
#include <vector>

namespace dtf::kernels::gloo_calls {

// Gloo's options of each call, with the buffers the call waits on (what
// a call given up interrupts).
inline std::vector<gloo::transport::UnboundBuffer*> Raw(
    std::initializer_list<
        const std::unique_ptr<gloo::transport::UnboundBuffer>*>
        buffers) {
  std::vector<gloo::transport::UnboundBuffer*> out;
  for (const auto* b : buffers) {
    if (*b != nullptr) out.push_back(b->get());
  }
  return out;
}

class AllreduceCall final : public gloo::AllreduceOptions {
 public:
  using gloo::AllreduceOptions::AllreduceOptions;
  std::vector<gloo::transport::UnboundBuffer*> buffers() const {
    std::vector<gloo::transport::UnboundBuffer*> out;
    for (const auto& b : impl_.in) out.push_back(b.get());
    for (const auto& b : impl_.out) out.push_back(b.get());
    return out;
  }
};

// The options of a call with an input and an output buffer.
template <typename Options>
class InOutCall final : public Options {
 public:
  using Options::Options;
  std::vector<gloo::transport::UnboundBuffer*> buffers() const {
    return Raw({&this->in, &this->out});
  }
};

using BroadcastCall = InOutCall<gloo::BroadcastOptions>;
using AllgatherCall = InOutCall<gloo::AllgatherOptions>;
using AllgathervCall = InOutCall<gloo::AllgathervOptions>;

class BarrierCall final : public gloo::BarrierOptions {
 public:
  using gloo::BarrierOptions::BarrierOptions;
  std::vector<gloo::transport::UnboundBuffer*> buffers() const {
    return Raw({&buffer});
  }
};

// Fails every pair of `context` and with it each operation pending on a
// pair, as a wait's timeout does (Gloo has no cancel): a wait of 1 ms on a
// buffer nothing is sent to.
inline void FailEveryPair(gloo::Context& context) {
  try {
    std::unique_ptr<gloo::transport::UnboundBuffer> probe =
        context.createUnboundBuffer(nullptr, 0);
    probe->waitRecv(nullptr, std::chrono::milliseconds(1));
  } catch (const std::exception&) {
    // The timeout's exception: every pair has failed.
  }
}

}  // namespace dtf::kernels::gloo_calls
