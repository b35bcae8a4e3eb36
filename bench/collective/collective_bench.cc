// Latency and bandwidth of dtf's Gloo collective (lib/kernels/gloo.h): an
// allreduce-mean of N floats between ranks that are threads of this
// process, each with its own Gloo context and TCP pairs over loopback, for
// a range of sizes (21,049 floats is the census wide & deep model's
// gradient). With --busy K, K threads spin meanwhile, as another worker's
// compute and input threads do on a small machine: a rank's wakeups then
// wait for a core. With --transport tls, the same over the TLS ring
// (lib/runtime/train/tls_ring.h) with certificates of a run's CA: the
// cost of encrypting a CPU allreduce against cleartext Gloo. Each rank has
// a stop flag, as in a run (so each Gloo call is watched by the thread that
// gives it up when the run stops: lib/kernels/call_watch.h); --stop-flag off
// leaves it out, for what the watch costs.
//
// collective_bench [--ranks 2] [--calls 300] [--warmup 30] [--busy 0]
//                  [--sizes 1,1024,21049,262144,4194304] [--json FILE]
//                  [--transport gloo|tls] [--stop-flag on|off]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "lib/base/strings.h"
#include "lib/kernels/gloo.h"
#include "lib/rpc/tls_certs.h"
#include "lib/runtime/train/tls_ring.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int ranks = 2;
  int calls = 300;
  int warmup = 30;
  int busy = 0;
  std::vector<int64_t> sizes = {1, 1024, 21049, 262144, 4194304};
  std::string json;
  std::string transport = "gloo";
  bool stop_flag = true;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "collective_bench: %s\nusage: collective_bench [--ranks N] "
               "[--calls N] [--warmup N] [--busy K] [--sizes A,B,...] "
               "[--json FILE] [--transport gloo|tls] [--stop-flag on|off]\n",
               why.c_str());
  std::exit(2);
}

int64_t Number(const char* flag, const char* text, int64_t min) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < min) {
    Usage(dtf::StrCat(flag, " needs an integer of at least ", min));
  }
  return v;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(dtf::StrCat(flag, " needs a value"));
    const char* value = argv[++i];
    if (flag == "--ranks") {
      o.ranks = int(Number("--ranks", value, 2));
    } else if (flag == "--calls") {
      o.calls = int(Number("--calls", value, 1));
    } else if (flag == "--warmup") {
      o.warmup = int(Number("--warmup", value, 0));
    } else if (flag == "--busy") {
      o.busy = int(Number("--busy", value, 0));
    } else if (flag == "--sizes") {
      o.sizes.clear();
      for (const std::string& part :
           std::vector<std::string>(absl::StrSplit(value, ','))) {
        o.sizes.push_back(Number("--sizes", part.c_str(), int64_t{1}));
      }
    } else if (flag == "--transport") {
      o.transport = value;
      if (o.transport != "gloo" && o.transport != "tls") {
        Usage("--transport takes gloo or tls");
      }
    } else if (flag == "--stop-flag") {
      if (std::string(value) != "on" && std::string(value) != "off") {
        Usage("--stop-flag takes on or off");
      }
      o.stop_flag = std::string(value) == "on";
    } else if (flag == "--json") {
      o.json = value;
    } else {
      Usage(dtf::StrCat("unknown flag ", flag));
    }
  }
  return o;
}

struct Result {
  int64_t floats = 0;
  double p50_us = 0;
  double p90_us = 0;
  double mean_us = 0;
};

// Every rank makes the same calls; rank 0's times are the figure.
Result Measure(std::vector<std::unique_ptr<dtf::kernels::Collective>>& ranks,
               int64_t floats, const Options& o) {
  std::vector<double> times;
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      dtf::kernels::Tensor t = dtf::kernels::Tensor::Empty({floats});
      for (int64_t i = 0; i < floats; ++i) t[i] = float(r + 1);
      for (int c = 0; c < o.warmup + o.calls; ++c) {
        const auto t0 = Clock::now();
        const dtf::Status st = ranks[r]->AllReduceMean(&t);
        const auto t1 = Clock::now();
        if (!st.ok()) {
          std::fprintf(stderr, "rank %zu: %s\n", r,
                       std::string(dtf::Message(st)).c_str());
          failed = true;
          return;
        }
        if (r == 0 && c >= o.warmup) {
          times.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (failed) std::exit(1);
  std::sort(times.begin(), times.end());
  Result out;
  out.floats = floats;
  out.p50_us = times[times.size() / 2] * 1e6;
  out.p90_us = times[times.size() * 9 / 10] * 1e6;
  double sum = 0;
  for (double t : times) sum += t;
  out.mean_us = sum / double(times.size()) * 1e6;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  dtf::kernels::MemoryStore store;
  dtf::kernels::CollectiveLimits limits;
  limits.timeout = std::chrono::seconds(60);
  std::atomic<bool> stopping{false};  // never set: a run not stopping
  if (o.stop_flag) limits.cancel = &stopping;
  std::vector<std::unique_ptr<dtf::kernels::Collective>> ranks(size_t(o.ranks));
  std::vector<dtf::rpc::TlsMaterial> tls(size_t(o.ranks));
  if (o.transport == "tls") {
    auto ca = dtf::rpc::MakeRunCa("bench");
    if (!ca.ok()) std::exit(1);
    for (int r = 0; r < o.ranks; ++r) {
      auto cert =
          dtf::rpc::IssueCert(*ca, dtf::StrCat("worker-", r), {"127.0.0.1"});
      if (!cert.ok()) std::exit(1);
      tls[size_t(r)] = {ca->cert, cert->cert, cert->key};
    }
  }
  {
    std::vector<std::thread> joins;
    for (int r = 0; r < o.ranks; ++r) {
      joins.emplace_back([&, r] {
        auto c = o.transport == "tls"
                     ? dtf::runtime::JoinTlsRing(
                           store, "bench/", "127.0.0.1", r, o.ranks,
                           tls[size_t(r)], limits, std::chrono::seconds(30))
                     : dtf::kernels::JoinGloo(store, "bench/", "127.0.0.1", r,
                                              o.ranks, limits,
                                              std::chrono::seconds(30));
        if (!c.ok()) {
          std::fprintf(stderr, "rank %d: %s\n", r,
                       std::string(dtf::Message(c.status())).c_str());
          std::exit(1);
        }
        ranks[size_t(r)] = *std::move(c);
      });
    }
    for (std::thread& t : joins) t.join();
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int k = 0; k < o.busy; ++k) {
    spinners.emplace_back([&stop] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  std::printf(
      "%s allreduce-mean, %d ranks (threads, loopback TCP), %d "
      "spinning threads beside them, %d calls after %d, %s\n",
      o.transport == "tls" ? "TLS ring" : "Gloo", o.ranks, o.busy, o.calls,
      o.warmup, o.stop_flag ? "a run's stop flag" : "no stop flag");
  std::printf("%12s %10s %10s %10s %12s\n", "floats", "p50 us", "p90 us",
              "mean us", "MB/s (p50)");
  std::vector<Result> results;
  for (const int64_t n : o.sizes) {
    const Result r = Measure(ranks, n, o);
    // A ring moves 2 (ranks - 1) / ranks of the buffer each way per rank.
    const double bytes =
        2.0 * double(o.ranks - 1) / double(o.ranks) * double(n) * sizeof(float);
    std::printf("%12lld %10.1f %10.1f %10.1f %12.1f\n", (long long)n, r.p50_us,
                r.p90_us, r.mean_us, bytes / r.p50_us);
    results.push_back(r);
  }
  stop = true;
  for (std::thread& t : spinners) t.join();
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << "{\"transport\": \"" << o.transport << "\", \"ranks\": " << o.ranks
      << ", \"busy\": " << o.busy << ", \"calls\": " << o.calls
      << ", \"stop_flag\": " << (o.stop_flag ? "true" : "false")
      << ", \"results\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      f << (i ? ", " : "") << "{\"floats\": " << results[i].floats
        << ", \"p50_us\": " << results[i].p50_us
        << ", \"p90_us\": " << results[i].p90_us
        << ", \"mean_us\": " << results[i].mean_us << "}";
    }
    f << "]}\n";
    if (!f) {
      std::fprintf(stderr, "collective_bench: cannot write %s\n",
                   o.json.c_str());
      return 1;
    }
  }
  return 0;
}
