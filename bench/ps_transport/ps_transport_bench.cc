// Parameter-server transport: how fast dtf's real PsService / PsClient move
// tensors over gRPC on loopback, beside raw TCP between the same two
// processes in the same run.
//
//   ps_transport_bench [--iters N] [--warmup N] [--calls N] [--json PATH]
//                      [--parts dense,sparse,tcp] [--work DIR] [--tls 0|1]
//
// The parameter server runs in a child process (forked before anything
// touches gRPC), built the way `dtf serve` builds it: PsService::Create from
// a job file (written to DIR/job.toml) whose MLP has a [4096, 4096] hidden
// kernel (16,777,216 floats, 64 MiB) and an 8-dimensional embedding of a
// 1,048,576-bucket hashed feature (a sparse table of 1M rows), SGD, async
// mode, one worker. The client is a PsClient in this process.
//
//   dense   each iteration pushes a 64 MiB gradient of the kernel (pieces
//           built with AppendDensePieces, as a worker does; the PS applies
//           it with SGD) and pulls the kernel back: MB/s of tensor bytes
//           moved (2 x 64 MiB per iteration), push and pull also alone.
//   sparse  round-trip latency of a Pull of 64 random rows of the
//           embedding table (64 x 8 floats), p50 / p99 over --calls calls.
//   tcp     the raw-TCP peers, against a second child process: the same
//           64 MiB sent and echoed back per iteration over one connection
//           (write all, read all, as a push then a pull), and a ping-pong of
//           64-byte messages (TCP_NODELAY), p50 / p99 over --calls round
//           trips.
//
// CPU seconds of the client and of the server during each timed phase are
// reported beside the wall time (2 cores: both sides compete for them).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/kernels/tensor.h"
#include "lib/rpc/server.h"
#include "lib/rpc/tls_certs.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/ps/ps_service.h"
#include "lib/runtime/ps/ps_tls_server.h"
#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kDenseRows = 4096;
constexpr int64_t kDenseCols = 4096;
constexpr int64_t kTableRows = 1 << 20;
constexpr int64_t kTableCols = 8;
constexpr int kSparseRowsPerPull = 64;
constexpr size_t kPingBytes = 64;
constexpr char kDenseName[] = "deep/dense_1/kernel";
constexpr char kTableName[] = "deep/key/embedding";
constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

constexpr char kJob[] =
    R"(# ps_transport_bench: one 64 MiB dense kernel and a 1M-row table.
[schema]
label = "label"
columns = ["label:int", "key:str"]

[[features.hashed]]
name = "key"
buckets = 1048576
embedding = 8
wide = false

[model]
type = "mlp"
hidden = [4096, 4096]

[train]
mode = "async"
seed = 1

[train.optimizer]
type = "sgd"
learning_rate = 0.01
)";

void Die(std::string_view what) {
  std::fprintf(stderr, "ps_transport_bench: %.*s\n", int(what.size()),
               what.data());
  std::exit(1);
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// User + system CPU seconds of process `pid` so far (/proc/PID/stat).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in(StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  // Fields after the command: state is field 3; utime and stime 14 and 15.
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < text.size() && fields.size() < 13) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    fields.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  if (fields.size() < 13) return 0;
  const double ticks = double(sysconf(_SC_CLK_TCK));
  return (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) /
         ticks;
}

// Wall and CPU time (this process and the server) of one phase.
struct Phase {
  explicit Phase(pid_t server) : server_(server) { Restart(); }
  void Restart() {
    start_ = Clock::now();
    self_cpu_ = ProcessCpuSeconds(getpid());
    server_cpu_ = ProcessCpuSeconds(server_);
  }
  double wall() const { return Seconds(Clock::now() - start_); }
  double self_cpu() const { return ProcessCpuSeconds(getpid()) - self_cpu_; }
  double server_cpu() const { return ProcessCpuSeconds(server_) - server_cpu_; }

 private:
  pid_t server_;
  Clock::time_point start_;
  double self_cpu_ = 0, server_cpu_ = 0;
};

struct Percentiles {
  double p50 = 0, p99 = 0, mean = 0;
};

Percentiles Summarize(std::vector<double> us) {
  Percentiles p;
  if (us.empty()) return p;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, size_t(q * double(us.size())))];
  };
  p.p50 = at(0.50);
  p.p99 = at(0.99);
  double sum = 0;
  for (double v : us) sum += v;
  p.mean = sum / double(us.size());
  return p;
}

// --------------------------------------------------------------- sockets

void WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) Die(StrCat("write: ", std::strerror(errno)));
    p += k;
    n -= size_t(k);
  }
}

// False at a clean end of stream before the first byte.
bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  const size_t want = n;
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0 && n == want) return false;
    if (k <= 0)
      Die(StrCat("read: ", k == 0 ? "early end" : std::strerror(errno)));
    p += k;
    n -= size_t(k);
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A socket listening on 127.0.0.1 at a port the kernel picks.
int Listen(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 4) != 0) {
    Die(StrCat("listen: ", std::strerror(errno)));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(uint16_t(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die(StrCat("connect: ", std::strerror(errno)));
  }
  NoDelay(fd);
  return fd;
}

// The raw-TCP peer, in a child process: serves connections one after the
// other until the client sends 'Q'. Each starts with a command byte:
//   'P'  echo 64-byte messages until the end of the stream;
//   'B'  a uint64 size, then: read that many bytes, send them back, repeat
//        until the end of the stream.
[[noreturn]] void TcpPeer(int listen_fd) {
  std::vector<char> buffer;
  for (;;) {
    const int fd = accept(listen_fd, nullptr, nullptr);
    if (fd < 0) _exit(1);
    NoDelay(fd);
    char command = 0;
    if (!ReadAll(fd, &command, 1) || command == 'Q') _exit(0);
    if (command == 'P') {
      char message[kPingBytes];
      while (ReadAll(fd, message, sizeof(message))) {
        WriteAll(fd, message, sizeof(message));
      }
    } else if (command == 'B') {
      uint64_t size = 0;
      ReadAll(fd, &size, sizeof(size));
      buffer.resize(size);
      while (ReadAll(fd, buffer.data(), size)) {
        WriteAll(fd, buffer.data(), size);
      }
    }
    close(fd);
  }
}

// ------------------------------------------------------------ the server

// The parameter server, in a child process: writes its port to `ready_fd`,
// serves until a Shutdown call.
[[noreturn]] void PsServer(const JobFile& job, const rpc::TlsMaterial& tls,
                           int ready_fd) {
  runtime::PsOptions po;
  po.credentials.run_id = "ps-transport-bench";
  po.credentials.secret = kSecret;
  po.credentials.tls = tls;
  po.threads = 1;
  auto service = runtime::PsService::Create(job, po);
  if (!service.ok()) Die(Message(service.status()));
  // As runtime::Serve builds a PS server.
  grpc::ServerBuilder builder;
  int port = 0;
  rpc::ConfigureServer(&builder, "127.0.0.1:0", po.credentials,
                       rpc::ServerLimits{}, &port);
  // With TLS, steps on the Session over TLS, as serve_ps.cc starts it.
  std::unique_ptr<runtime::PsTlsServer> sessions;
  if (tls.on()) {
    auto started = runtime::PsTlsServer::Start("127.0.0.1", tls, po.credentials,
                                               &(*service)->store());
    if (!started.ok()) Die(Message(started.status()));
    sessions = *std::move(started);
    (*service)->set_session_port(sessions->port());
  }
  builder.RegisterService(service->get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) Die("the PS cannot listen");
  WriteAll(ready_fd, &port, sizeof(port));
  close(ready_fd);
  while (!(*service)->WaitForShutdown(std::chrono::milliseconds(200))) {
  }
  sessions.reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server.reset();
  _exit(0);
}

// Forks `child(fd)`; returns its pid and reads the int it writes to fd.
template <typename F>
pid_t Spawn(F child, int* value) {
  int fds[2];
  if (pipe(fds) != 0) Die("pipe");
  const pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
    close(fds[0]);
    child(fds[1]);
  }
  close(fds[1]);
  if (!ReadAll(fds[0], value, sizeof(*value))) Die("a child failed to start");
  close(fds[0]);
  return pid;
}

// ----------------------------------------------------------- the figures

struct Options {
  int iters = 10;
  int warmup = 2;
  int calls = 2000;
  std::string json;
  std::string work;
  bool dense = true, sparse = true, tcp = true;
  // Mutual TLS between the worker and the PS, as a run off loopback.
  bool tls = false;
};

struct Figures {
  // dense
  double push_s = 0, pull_s = 0, push_pull_s = 0;
  double dense_self_cpu = 0, dense_server_cpu = 0;
  double push_pull_mb_s = 0, push_mb_s = 0, pull_mb_s = 0;
  // sparse
  Percentiles sparse_us;
  // tcp
  double tcp_s = 0, tcp_mb_s = 0, tcp_self_cpu = 0, tcp_server_cpu = 0;
  Percentiles ping_us;
};

constexpr double kDenseBytes = double(kDenseRows * kDenseCols * 4);

void BenchDense(runtime::PsClient* ps, pid_t server, const Options& o,
                Figures* f) {
  kernels::Tensor value = kernels::Tensor::Zeros({kDenseRows, kDenseCols});
  kernels::Tensor grad = kernels::Tensor::Empty({kDenseRows, kDenseCols});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1e-3f, 1e-3f);
  for (int64_t i = 0; i < grad.size(); ++i) grad[i] = uniform(rng);
  const std::vector<int64_t> shape = {kDenseRows, kDenseCols};
  std::vector<runtime::PsClient::DenseVar> dense = {{kDenseName, &value}};

  double push_s = 0, pull_s = 0;
  Phase phase(server);
  for (int i = -o.warmup; i < o.iters; ++i) {
    if (i == 0) {
      push_s = pull_s = 0;
      phase.Restart();
    }
    const auto t0 = Clock::now();
    // As a worker pushes: pieces built from the gradient, then streamed.
    std::vector<std::vector<rpc::TensorPiece>> pieces(1);
    runtime::AppendDensePieces(kDenseName, shape, grad.data(), kDenseRows,
                               kDenseCols, 0, &pieces[0]);
    auto pushed = ps->Push(std::move(pieces), 1, 0.0);
    if (!pushed.ok()) Die(Message(pushed.status()));
    const auto t1 = Clock::now();
    Status st = ps->Pull(dense, {}, 0);
    if (!st.ok()) Die(Message(st));
    const auto t2 = Clock::now();
    push_s += Seconds(t1 - t0);
    pull_s += Seconds(t2 - t1);
  }
  f->dense_self_cpu = phase.self_cpu();
  f->dense_server_cpu = phase.server_cpu();
  f->push_s = push_s;
  f->pull_s = pull_s;
  f->push_pull_s = push_s + pull_s;
  const double mb = kDenseBytes * o.iters / 1e6;
  f->push_mb_s = mb / push_s;
  f->pull_mb_s = mb / pull_s;
  f->push_pull_mb_s = 2 * mb / (push_s + pull_s);
  // A sanity check that the pull returned the PS's values.
  if (value[0] == 0 && value[1] == 0 && value[2] == 0) {
    Die("the pulled kernel is all zeros");
  }
}

void BenchSparse(runtime::PsClient* ps, const Options& o, Figures* f) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int64_t> row(0, kTableRows - 1);
  kernels::Tensor out;
  std::vector<int64_t> ids;
  std::vector<runtime::PsClient::SparseVar> sparse(1);
  sparse[0].name = kTableName;
  sparse[0].ids = &ids;
  sparse[0].rows = kTableRows;
  sparse[0].cols = kTableCols;
  sparse[0].out = &out;
  std::vector<double> us;
  const int warmup = std::max(10, o.calls / 10);
  for (int i = -warmup; i < o.calls; ++i) {
    std::set<int64_t> unique;
    while (int(unique.size()) < kSparseRowsPerPull) unique.insert(row(rng));
    ids.assign(unique.begin(), unique.end());
    const auto t0 = Clock::now();
    Status st = ps->Pull({}, sparse, 0);
    if (!st.ok()) Die(Message(st));
    if (i >= 0) us.push_back(Seconds(Clock::now() - t0) * 1e6);
  }
  if (out.rows() != kSparseRowsPerPull || out.cols() != kTableCols) {
    Die("the sparse pull returned the wrong shape");
  }
  f->sparse_us = Summarize(std::move(us));
}

void BenchTcp(int port, pid_t peer, const Options& o, Figures* f) {
  // Bulk: 64 MiB there and back per iteration.
  {
    const int fd = Connect(port);
    const uint64_t size = uint64_t(kDenseBytes);
    std::vector<char> out(size, 1), in(size);
    WriteAll(fd, "B", 1);
    WriteAll(fd, &size, sizeof(size));
    Phase phase(peer);
    for (int i = -o.warmup; i < o.iters; ++i) {
      if (i == 0) phase.Restart();
      WriteAll(fd, out.data(), size);
      ReadAll(fd, in.data(), size);
    }
    f->tcp_s = phase.wall();
    f->tcp_self_cpu = phase.self_cpu();
    f->tcp_server_cpu = phase.server_cpu();
    f->tcp_mb_s = 2 * kDenseBytes * o.iters / 1e6 / f->tcp_s;
    close(fd);
  }
  // Ping-pong of 64-byte messages.
  {
    const int fd = Connect(port);
    WriteAll(fd, "P", 1);
    char message[kPingBytes] = {};
    std::vector<double> us;
    const int warmup = std::max(10, o.calls / 10);
    for (int i = -warmup; i < o.calls; ++i) {
      const auto t0 = Clock::now();
      WriteAll(fd, message, sizeof(message));
      ReadAll(fd, message, sizeof(message));
      if (i >= 0) us.push_back(Seconds(Clock::now() - t0) * 1e6);
    }
    f->ping_us = Summarize(std::move(us));
    close(fd);
  }
  const int fd = Connect(port);
  WriteAll(fd, "Q", 1);
  close(fd);
}

void WriteJson(const Options& o, const Figures& f) {
  std::string j = "{\n";
  StrAppend(&j, "  \"dense\": {\"variable\": \"", kDenseName,
            "\", \"shape\": [", kDenseRows, ", ", kDenseCols,
            "], \"bytes\": ", int64_t(kDenseBytes),
            ", \"piece_bytes\": ", runtime::kMaxPieceBytes,
            ", \"iters\": ", o.iters, ", \"warmup\": ", o.warmup, ",\n");
  StrAppend(
      &j, "    \"push_seconds\": ", f.push_s, ", \"pull_seconds\": ", f.pull_s,
      ",\n    \"push_mb_s\": ", f.push_mb_s, ", \"pull_mb_s\": ", f.pull_mb_s,
      ", \"push_pull_mb_s\": ", f.push_pull_mb_s,
      ",\n    \"client_cpu_seconds\": ", f.dense_self_cpu,
      ", \"server_cpu_seconds\": ", f.dense_server_cpu, "},\n");
  StrAppend(&j, "  \"sparse\": {\"variable\": \"", kTableName,
            "\", \"table_rows\": ", kTableRows, ", \"cols\": ", kTableCols,
            ", \"rows_per_pull\": ", kSparseRowsPerPull,
            ", \"calls\": ", o.calls, ", \"p50_us\": ", f.sparse_us.p50,
            ", \"p99_us\": ", f.sparse_us.p99,
            ", \"mean_us\": ", f.sparse_us.mean, "},\n");
  StrAppend(&j, "  \"tcp_bulk\": {\"bytes_each_way\": ", int64_t(kDenseBytes),
            ", \"iters\": ", o.iters, ", \"seconds\": ", f.tcp_s,
            ", \"mb_s\": ", f.tcp_mb_s,
            ", \"client_cpu_seconds\": ", f.tcp_self_cpu,
            ", \"server_cpu_seconds\": ", f.tcp_server_cpu, "},\n");
  StrAppend(&j, "  \"tcp_ping_pong\": {\"message_bytes\": ", kPingBytes,
            ", \"calls\": ", o.calls, ", \"p50_us\": ", f.ping_us.p50,
            ", \"p99_us\": ", f.ping_us.p99, ", \"mean_us\": ", f.ping_us.mean,
            "}\n}\n");
  std::ofstream out(o.json);
  out << j;
  if (!out) Die(StrCat("cannot write ", o.json));
}

int Main(int argc, char** argv) {
  Options o;
  o.work =
      (fs::temp_directory_path() / StrCat("dtf-ps-transport-bench-", getpid()))
          .string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--iters") {
      o.iters = std::atoi(value.c_str());
    } else if (flag == "--warmup") {
      o.warmup = std::atoi(value.c_str());
    } else if (flag == "--calls") {
      o.calls = std::atoi(value.c_str());
    } else if (flag == "--json") {
      o.json = value;
    } else if (flag == "--work") {
      o.work = value;
    } else if (flag == "--tls") {
      o.tls = value == "1";
    } else if (flag == "--parts") {
      o.dense = value.find("dense") != std::string::npos;
      o.sparse = value.find("sparse") != std::string::npos;
      o.tcp = value.find("tcp") != std::string::npos;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "flag %s needs a value\n", argv[argc - 1]);
    return 2;
  }
  if (o.iters < 1 || o.warmup < 0 || o.calls < 1) Die("bad counts");

  fs::create_directories(o.work);
  const std::string job_path = (fs::path(o.work) / "job.toml").string();
  {
    std::ofstream out(job_path);
    out << kJob;
  }
  auto job = LoadJobFile(job_path);
  if (!job.ok()) Die(Message(job.status()));

  // Both children before this process starts any thread (gRPC's included).
  Figures f;
  int tcp_port = 0, ps_port = 0;
  pid_t tcp_pid = -1;
  if (o.tcp) {
    int listen_fd = -1;
    tcp_pid = Spawn(
        [&](int fd) {
          int port = 0;
          listen_fd = Listen(&port);
          WriteAll(fd, &port, sizeof(port));
          close(fd);
          TcpPeer(listen_fd);
        },
        &tcp_port);
  }
  std::fprintf(stderr,
               "starting the PS (building a 64 MiB kernel and a "
               "1M x 8 table)...\n");
  // The run's CA and a certificate each for the PS and the worker, as dtf
  // launch makes them.
  rpc::TlsMaterial server_tls, client_tls;
  if (o.tls) {
    auto ca = rpc::MakeRunCa("ps-transport-bench");
    if (!ca.ok()) Die(Message(ca.status()));
    auto server = rpc::IssueCert(*ca, "ps-0", {"127.0.0.1"});
    auto client = rpc::IssueCert(*ca, "worker-0", {"127.0.0.1"});
    if (!server.ok() || !client.ok()) Die("cannot issue the certificates");
    server_tls = {ca->cert, server->cert, server->key};
    client_tls = {ca->cert, client->cert, client->key};
  }
  const pid_t ps_pid =
      Spawn([&](int fd) { PsServer(*job, server_tls, fd); }, &ps_port);

  runtime::RunCredentials creds;
  creds.run_id = "ps-transport-bench";
  creds.secret = kSecret;
  creds.tls = client_tls;
  runtime::PsClient ps({StrCat("127.0.0.1:", ps_port)}, creds, 0,
                       std::chrono::seconds(120));
  if (o.dense) {
    std::fprintf(stderr, "dense push + pull, %d iterations after %d...\n",
                 o.iters, o.warmup);
    BenchDense(&ps, ps_pid, o, &f);
  }
  if (o.sparse) {
    std::fprintf(stderr, "sparse pull latency, %d calls...\n", o.calls);
    BenchSparse(&ps, o, &f);
  }
  Status st = ps.Shutdown("benchmark done");
  if (!st.ok()) Die(Message(st));
  int wstatus = 0;
  waitpid(ps_pid, &wstatus, 0);
  if (o.tcp) {
    std::fprintf(stderr, "raw TCP: 64 MiB echo and 64-byte ping-pong...\n");
    BenchTcp(tcp_port, tcp_pid, o, &f);
    waitpid(tcp_pid, &wstatus, 0);
  }

  std::printf("%-40s %10s %10s %10s %10s\n", "", "MB/s", "wall s", "client cpu",
              "server cpu");
  if (o.dense) {
    std::printf("%-40s %10.1f %10.3f %10.2f %10.2f\n",
                "dtf push + pull (64 MiB)", f.push_pull_mb_s, f.push_pull_s,
                f.dense_self_cpu, f.dense_server_cpu);
    std::printf("%-40s %10.1f %10.3f\n", "  push alone", f.push_mb_s, f.push_s);
    std::printf("%-40s %10.1f %10.3f\n", "  pull alone", f.pull_mb_s, f.pull_s);
  }
  if (o.tcp) {
    std::printf("%-40s %10.1f %10.3f %10.2f %10.2f\n",
                "raw TCP echo (64 MiB there and back)", f.tcp_mb_s, f.tcp_s,
                f.tcp_self_cpu, f.tcp_server_cpu);
  }
  std::printf("\n%-40s %10s %10s %10s\n", "round trip", "p50 us", "p99 us",
              "mean us");
  if (o.sparse) {
    std::printf("%-40s %10.1f %10.1f %10.1f\n",
                "dtf sparse pull (64 x 8 floats)", f.sparse_us.p50,
                f.sparse_us.p99, f.sparse_us.mean);
  }
  if (o.tcp) {
    std::printf("%-40s %10.1f %10.1f %10.1f\n", "raw TCP ping-pong (64 bytes)",
                f.ping_us.p50, f.ping_us.p99, f.ping_us.mean);
  }
  if (!o.json.empty()) WriteJson(o, f);
  fs::remove(job_path);
  std::error_code ignored;
  fs::remove(o.work, ignored);  // only when empty
  return 0;
}

}  // namespace
}  // namespace dtf

int main(int argc, char** argv) { return dtf::Main(argc, argv); }
