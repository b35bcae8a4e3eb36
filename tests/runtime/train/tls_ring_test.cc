// The TLS ring (lib/runtime/train/tls_ring.h) between ranks that are
// threads over loopback TCP with real certificates of a run's CA: every
// collective's values, the same bits on every rank, and strangers (no
// certificate, another run's CA, a certificate of the run naming another
// task, cleartext bytes) dropped at the handshake while the ring is made.
#include "lib/runtime/train/tls_ring.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/kernels/tensor.h"
#include "lib/rpc/tls_certs.h"
#include "lib/rpc/tls_stream.h"

namespace dtf::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A run's CA and a certificate per task ("worker-0", ...).
struct RunCerts {
  rpc::Pem ca;
  std::map<std::string, rpc::TlsMaterial> tasks;
};

RunCerts MakeCerts(std::string_view run, int workers) {
  RunCerts out;
  StatusOr<rpc::Pem> ca = rpc::MakeRunCa(run);
  EXPECT_TRUE(ca.ok()) << ca.status();
  out.ca = *ca;
  for (int w = 0; w < workers; ++w) {
    const std::string name = StrCat("worker-", w);
    StatusOr<rpc::Pem> cert = rpc::IssueCert(out.ca, name, {"127.0.0.1"});
    EXPECT_TRUE(cert.ok()) << cert.status();
    out.tasks[name] = {out.ca.cert, cert->cert, cert->key};
  }
  return out;
}

// Joins `size` ranks as threads; each runs `body` on its collective.
kernels::CollectiveLimits TenSeconds() {
  kernels::CollectiveLimits limits;
  limits.timeout = seconds(10);
  return limits;
}

void RunRing(const RunCerts& certs, int size,
             const std::function<void(kernels::Collective&)>& body,
             kernels::MemoryStore* store = nullptr,
             const kernels::CollectiveLimits& limits = TenSeconds()) {
  kernels::MemoryStore own;
  if (store == nullptr) store = &own;
  // No body starts before every rank has joined: a rank that aborts at
  // once must not fail a peer's join.
  std::latch joined(size);
  std::vector<std::thread> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.emplace_back([&, r] {
      StatusOr<std::unique_ptr<kernels::Collective>> c = JoinTlsRing(
          *store, "ring/", "127.0.0.1", r, size,
          certs.tasks.at(StrCat("worker-", r)), limits, seconds(20));
      joined.arrive_and_wait();
      ASSERT_TRUE(c.ok()) << c.status();
      body(**c);
    });
  }
  for (std::thread& t : ranks) t.join();
}

TEST(TlsRing, EveryCollectiveHasItsValueAndTheSameBitsOnEveryRank) {
  constexpr int kRanks = 3;
  constexpr int kElements = 100003;  // not a multiple of the ranks
  const RunCerts certs = MakeCerts("run-1", kRanks);
  std::vector<std::vector<float>> inputs(kRanks);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& in : inputs) {
    for (int i = 0; i < kElements; ++i) in.push_back(dist(rng));
  }
  std::vector<std::vector<float>> means(kRanks);
  std::vector<float> mins(kRanks);
  std::vector<std::vector<std::string>> gathered(kRanks);
  std::vector<std::vector<float>> broadcast(kRanks);
  RunRing(certs, kRanks, [&](kernels::Collective& c) {
    const int r = c.rank();
    kernels::Tensor t = kernels::Tensor::FromValues(
        {kElements}, std::span<const float>(inputs[size_t(r)]));
    ASSERT_TRUE(c.AllReduceMean(&t).ok());
    means[size_t(r)].assign(t.data(), t.data() + kElements);
    float m = float(10 - r);
    ASSERT_TRUE(c.AllReduceMin(&m).ok());
    mins[size_t(r)] = m;
    StatusOr<std::vector<std::string>> all =
        c.AllGather(std::string(size_t(r) * 5, char('a' + r)));
    ASSERT_TRUE(all.ok()) << all.status();
    gathered[size_t(r)] = *all;
    kernels::Tensor b = kernels::Tensor::Filled({4}, float(r));
    ASSERT_TRUE(c.Broadcast(&b, 1).ok());
    broadcast[size_t(r)].assign(b.data(), b.data() + 4);
    ASSERT_TRUE(c.Barrier().ok());
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(means[size_t(r)].size(), size_t(kElements));
    EXPECT_EQ(std::memcmp(means[size_t(r)].data(), means[0].data(),
                          kElements * sizeof(float)),
              0)
        << "rank " << r;
    EXPECT_EQ(mins[size_t(r)], 8.0f);
    EXPECT_EQ(gathered[size_t(r)],
              (std::vector<std::string>{"", "bbbbb", "cccccccccc"}));
    EXPECT_EQ(broadcast[size_t(r)], std::vector<float>(4, 1.0f));
  }
  for (int i = 0; i < kElements; i += 997) {
    const float want =
        (inputs[0][size_t(i)] + inputs[1][size_t(i)] + inputs[2][size_t(i)]) /
        3;
    EXPECT_NEAR(means[0][size_t(i)], want, 1e-6f) << i;
  }
}

// Connects to `address` and sends cleartext bytes; whether the peer ever
// answered a byte.
bool CleartextAnswered(const std::string& address) {
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return false;
  }
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const char junk[] = "GET / HTTP/1.1\r\n\r\n";
  (void)!write(fd, junk, sizeof(junk));
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  // A TLS server answers cleartext with at most an alert record (type 21).
  return n > 0 && buf[0] != 21;
}

// Connections that never send a byte of their handshake (up to the
// listener's 5 s each) hold up neither each other nor the peer awaited:
// each handshake runs on its own, and the peer is accepted at once.
TEST(TlsListener, SilentConnectionsDoNotHoldUpThePeer) {
  const RunCerts certs = MakeCerts("run-1", 2);
  StatusOr<std::unique_ptr<rpc::TlsListener>> listener =
      rpc::TlsListener::Listen("127.0.0.1", certs.tasks.at("worker-0"),
                               seconds(10));
  ASSERT_TRUE(listener.ok()) << listener.status();
  const std::string address = StrCat("127.0.0.1:", (*listener)->port());
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t((*listener)->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    silent.push_back(fd);
  }
  std::thread peer([&] {
    // After the silent ones are accepted and waiting in their handshakes.
    std::this_thread::sleep_for(milliseconds(300));
    StatusOr<std::unique_ptr<rpc::TlsStream>> s =
        rpc::TlsConnect(address, certs.tasks.at("worker-1"), "worker-0",
                        seconds(5), seconds(5));
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->WriteAll("x", 1).ok());
  });
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<rpc::TlsStream>> got =
      (*listener)->Accept("worker-1", seconds(20), nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  peer.join();
  ASSERT_TRUE(got.ok()) << got.status();
  char byte = 0;
  ASSERT_TRUE((*got)->ReadAll(&byte, 1).ok());
  EXPECT_EQ(byte, 'x');
  EXPECT_LT(took, seconds(3)) << "the silent connections held the peer up";
  for (const int fd : silent) close(fd);
}

// A stream's I/O timeout can be shortened for one exchange (a PS step's
// deadline): a write to a peer that stops reading then fails by it, not
// after the timeout the stream was made with. A "worker-*" pattern accepts
// any worker and says which.
TEST(TlsStream, AWriteToAPeerThatStopsReadingEndsAtTheIoTimeout) {
  const RunCerts certs = MakeCerts("run-1", 2);
  StatusOr<std::unique_ptr<rpc::TlsListener>> listener =
      rpc::TlsListener::Listen("127.0.0.1", certs.tasks.at("worker-0"),
                               seconds(60));
  ASSERT_TRUE(listener.ok()) << listener.status();
  StatusOr<std::unique_ptr<rpc::TlsStream>> client;
  std::thread connect([&] {
    client = rpc::TlsConnect(StrCat("127.0.0.1:", (*listener)->port()),
                             certs.tasks.at("worker-1"), "worker-0", seconds(5),
                             seconds(60));
  });
  StatusOr<std::unique_ptr<rpc::TlsStream>> server =
      (*listener)->Accept("worker-*", seconds(5), nullptr);
  connect.join();
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->peer(), "worker-1");
  (*client)->set_io_timeout(milliseconds(500));
  const std::vector<char> big(size_t(256) << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  Status st = (*client)->WriteAll(big.data(), big.size());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_LT(took, seconds(20));
}

TEST(TlsRing, StrangersAreDroppedAtTheHandshakeAndTheRingIsMade) {
  const RunCerts certs = MakeCerts("run-1", 2);
  const RunCerts other = MakeCerts("run-2", 2);
  kernels::MemoryStore store;
  std::thread strangers([&] {
    StatusOr<std::string> address = store.Get("ring/0", seconds(20));
    ASSERT_TRUE(address.ok()) << address.status();
    // Rank 0 waits for worker-1: another run's worker-1, the run's own
    // worker-0, and cleartext are refused.
    EXPECT_FALSE(CleartextAnswered(*address));
    for (const rpc::TlsMaterial& who :
         {other.tasks.at("worker-1"), certs.tasks.at("worker-0")}) {
      StatusOr<std::unique_ptr<rpc::TlsStream>> s =
          rpc::TlsConnect(*address, who, "worker-0", seconds(5), seconds(2));
      if (!s.ok()) continue;  // refused at the handshake
      char byte = 0;
      // TLS 1.3: a client learns of its refusal on its first read.
      EXPECT_FALSE((*s)->WriteAll("x", 1).ok() && (*s)->ReadAll(&byte, 1).ok());
    }
    // Now the real worker-1 may join.
    ASSERT_TRUE(store.Set("go", "1").ok());
  });
  kernels::CollectiveLimits limits;
  limits.timeout = seconds(10);
  std::vector<float> got(2);
  std::thread rank0([&] {
    StatusOr<std::unique_ptr<kernels::Collective>> c =
        JoinTlsRing(store, "ring/", "127.0.0.1", 0, 2,
                    certs.tasks.at("worker-0"), limits, seconds(20));
    ASSERT_TRUE(c.ok()) << c.status();
    kernels::Tensor t = kernels::Tensor::Filled({1}, 1.0f);
    ASSERT_TRUE((*c)->AllReduceMean(&t).ok());
    got[0] = t.data()[0];
  });
  ASSERT_TRUE(store.Get("go", seconds(20)).ok());
  StatusOr<std::unique_ptr<kernels::Collective>> c =
      JoinTlsRing(store, "ring/", "127.0.0.1", 1, 2, certs.tasks.at("worker-1"),
                  limits, seconds(20));
  ASSERT_TRUE(c.ok()) << c.status();
  kernels::Tensor t = kernels::Tensor::Filled({1}, 3.0f);
  ASSERT_TRUE((*c)->AllReduceMean(&t).ok());
  got[1] = t.data()[0];
  rank0.join();
  strangers.join();
  EXPECT_EQ(got, (std::vector<float>{2.0f, 2.0f}));
}

// Rank 1 of 2 joins but never calls (a peer that hung, or behind a cut
// network): rank 0's allreduce under way when the run begins stopping ends
// the grace later, Cancelled, not at the timeout; later calls fail at once.
TEST(TlsRing, ACallUnderWayWhenTheRunStopsEndsAfterTheGrace) {
  const RunCerts certs = MakeCerts("run-1", 2);
  std::atomic<bool> cancel{false};
  std::atomic<bool> done{false};
  kernels::CollectiveLimits limits;
  limits.timeout = seconds(60);
  limits.cancel = &cancel;
  limits.cancel_grace = std::chrono::milliseconds(300);
  std::chrono::steady_clock::duration took{};
  RunRing(
      certs, 2,
      [&](kernels::Collective& c) {
        if (c.rank() == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          const auto stop = std::chrono::steady_clock::now();
          cancel = true;
          while (!done.load() &&
                 std::chrono::steady_clock::now() - stop < seconds(90)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          took = std::chrono::steady_clock::now() - stop;
          return;
        }
        kernels::Tensor t = kernels::Tensor::Filled({100000}, 1.0f);
        const Status st = c.AllReduceMean(&t);
        done = true;
        EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
        EXPECT_NE(Message(st).find("AllReduceMean on rank 0 of 2 (TLS ring): "
                                   "the run is being stopped"),
                  std::string_view::npos)
            << st;
        EXPECT_EQ(c.Barrier().code(), absl::StatusCode::kFailedPrecondition);
      },
      nullptr, limits);
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, seconds(10));
}

// A rank that dies mid-run fails its neighbour's call (Unavailable) well
// before the timeout, and every later call at once.
TEST(TlsRing, ALostPeerFailsTheCallAndEveryLaterOne) {
  const RunCerts certs = MakeCerts("run-1", 2);
  RunRing(certs, 2, [&](kernels::Collective& c) {
    if (c.rank() == 1) {
      c.Abort();
      return;
    }
    kernels::Tensor t = kernels::Tensor::Filled({1000}, 1.0f);
    Status st = c.AllReduceMean(&t);
    EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
    EXPECT_NE(Message(st).find("rank 0 of 2"), std::string_view::npos) << st;
    EXPECT_EQ(c.Barrier().code(), absl::StatusCode::kFailedPrecondition);
  });
}

}  // namespace
}  // namespace dtf::runtime
