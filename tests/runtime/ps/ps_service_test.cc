// PsService and PsClient over real gRPC on loopback: the Step call (push and
// next pull in one) in its unary form and its streamed form, across two
// parameter servers, in async and sync mode; each case twice: in
// plaintext, and under a run's mutual TLS, where steps travel on the
// Session over TLS (PsTlsServer, PsTlsStream) beside gRPC's control calls.
#include "lib/runtime/ps/ps_service.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/rpc/call.h"
#include "lib/rpc/server.h"
#include "lib/rpc/tls_certs.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/ps/ps_tls_server.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";
constexpr float kLearningRate = 0.5f;

// An MLP whose second hidden kernel ([1024, 2048] floats, 8 MiB) is larger
// than a unary Step carries to either PS, and a 1000-row table.
std::string JobText(std::string_view mode, std::string_view optimizer = "sgd") {
  return StrCat(R"(
[schema]
label = "label"
columns = ["label:int", "key:str"]

[[features.hashed]]
name = "key"
buckets = 1000
embedding = 4
wide = false

[model]
type = "mlp"
hidden = [1024, 2048]

[train]
mode = ")",
                mode, R"("
seed = 7

[train.optimizer]
type = ")",
                optimizer, R"("
learning_rate = 0.5
)");
}

// The run's CA, and certificates for 127.0.0.1 naming the parameter
// servers and worker 0.
struct TestCerts {
  rpc::Pem ca;
  std::vector<rpc::TlsMaterial> ps;
  rpc::TlsMaterial worker;
};

const TestCerts& Certs() {
  static const TestCerts* const certs = [] {
    auto* out = new TestCerts;
    StatusOr<rpc::Pem> ca = rpc::MakeRunCa("test-run");
    EXPECT_TRUE(ca.ok()) << ca.status();
    out->ca = *ca;
    auto issue = [&](const std::string& name) {
      StatusOr<rpc::Pem> cert = rpc::IssueCert(out->ca, name, {"127.0.0.1"});
      EXPECT_TRUE(cert.ok()) << cert.status();
      return rpc::TlsMaterial{out->ca.cert, cert->cert, cert->key};
    };
    for (int p = 0; p < 2; ++p) out->ps.push_back(issue(StrCat("ps-", p)));
    out->worker = issue("worker-0");
    return out;
  }();
  return *certs;
}

class PsServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  bool tls() const { return GetParam(); }

  void Start(std::string_view mode, int num_ps,
             std::string_view optimizer = "sgd",
             const std::string& restore_from = "", int num_workers = 1) {
    const std::string path = dir_.Join("job.toml");
    dtf::testing::WriteFile(path, JobText(mode, optimizer));
    StatusOr<JobFile> job = LoadJobFile(path);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    StatusOr<std::vector<VariableSpec>> layout =
        Model::Layout(*layer, *job_.model);
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = *std::move(layout);
    creds_ = {"test-run", kSecret, ""};
    const RunCredentials plain = creds_;
    if (tls()) creds_.tls = Certs().worker;
    for (int p = 0; p < num_ps; ++p) {
      PsOptions o;
      o.index = p;
      o.num_ps = num_ps;
      o.num_workers = num_workers;
      o.credentials = plain;
      o.restore_from = restore_from;
      StatusOr<std::unique_ptr<PsService>> ps = PsService::Create(job_, o);
      ASSERT_TRUE(ps.ok()) << ps.status();
      grpc::ServerBuilder builder;
      int port = 0;
      RunCredentials own = plain;
      if (tls()) own.tls = Certs().ps[size_t(p)];
      builder.AddListeningPort(
          "127.0.0.1:0",
          tls() ? rpc::MakeServerCredentials(own, /*loopback=*/true)
                : grpc::InsecureServerCredentials(),
          &port);
      builder.SetMaxReceiveMessageSize(8 << 20);
      // As serve_task.cc: a short poll, so that Shutdown never waits long.
      builder.SetSyncServerOption(
          grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 200);
      builder.RegisterService(ps->get());
      servers_.push_back(builder.BuildAndStart());
      ASSERT_NE(servers_.back(), nullptr);
      addresses_.push_back(StrCat("127.0.0.1:", port));
      if (tls()) {
        StatusOr<std::unique_ptr<PsTlsServer>> sessions =
            PsTlsServer::Start("127.0.0.1", own.tls, plain, &(*ps)->store());
        ASSERT_TRUE(sessions.ok()) << sessions.status();
        (*ps)->set_session_port((*sessions)->port());
        sessions_.push_back(*std::move(sessions));
      }
      services_.push_back(*std::move(ps));
    }
  }
  void TearDown() override { Stop(); }
  void Stop() {
    // A client's Session stream stays open while the client lives: as
    // serve_task.cc, calls still open after a grace time are cancelled.
    for (auto& s : servers_) {
      s->Shutdown(std::chrono::system_clock::now() +
                  std::chrono::milliseconds(200));
    }
    sessions_.clear();
    servers_.clear();
    services_.clear();
    addresses_.clear();
  }

  // Every variable, whole: dense ones as dense requests, tables as every
  // row.
  // With `states`, their optimizer slots too (created by `optimizer`).
  void AllVariables(std::vector<kernels::Tensor>* values,
                    std::vector<PsClient::DenseVar>* dense,
                    std::vector<PsClient::SparseVar>* sparse,
                    std::vector<kernels::OptimizerState>* states = nullptr,
                    const kernels::Optimizer* optimizer = nullptr) {
    values->resize(layout_.size());
    if (states != nullptr) states->resize(layout_.size());
    for (size_t v = 0; v < layout_.size(); ++v) {
      const VariableSpec& spec = layout_[v];
      kernels::OptimizerState* state = nullptr;
      if (states != nullptr && spec.trainable) {
        (*states)[v] = optimizer->CreateState(spec.shape);
        state = &(*states)[v];
      }
      if (!spec.sparse) {
        (*values)[v] = kernels::Tensor::Empty(spec.shape);
        dense->push_back({spec.name, &(*values)[v], state});
        continue;
      }
      PsClient::SparseVar s;
      s.name = spec.name;
      s.all = true;
      s.rows = spec.shape[0];
      s.cols = PieceCols(spec.shape);
      s.out = &(*values)[v];
      s.state = state;
      sparse->push_back(s);
    }
  }

  // A gradient of `g` for every row of every trainable variable, as pieces
  // per PS.
  std::vector<std::vector<rpc::TensorPiece>> Gradients(float g, int num_ps,
                                                       bool dense_too) {
    Partition part{num_ps};
    std::vector<std::vector<rpc::TensorPiece>> pieces(
        static_cast<size_t>(num_ps));
    for (const VariableSpec& spec : layout_) {
      if (!spec.trainable || (!spec.sparse && !dense_too)) continue;
      const int64_t cols = PieceCols(spec.shape);
      const int64_t rows = spec.shape[0];
      std::vector<float> values(size_t(rows * cols), g);
      for (int p = 0; p < num_ps; ++p) {
        if (!spec.sparse) {
          auto [b, e] = part.DenseRange(rows, p);
          AppendDensePieces(spec.name, spec.shape, values.data() + b * cols,
                            e - b, cols, b, &pieces[size_t(p)]);
          continue;
        }
        std::vector<int64_t> ids;
        for (int64_t id = 0; id < rows; ++id) {
          if (part.Owner(id) == p) ids.push_back(id);
        }
        AppendSparsePieces(spec.name, spec.shape, ids.data(), values.data(),
                           int64_t(ids.size()), cols, &pieces[size_t(p)]);
      }
    }
    return pieces;
  }

  dtf::testing::TempDir dir_;
  JobFile job_;
  std::vector<VariableSpec> layout_;
  RunCredentials creds_;
  std::vector<std::unique_ptr<PsService>> services_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::vector<std::unique_ptr<PsTlsServer>> sessions_;
  std::vector<std::string> addresses_;
};

// One Step per PS applies the push and answers with the values after it:
// streamed for the 8 MiB kernel, unary for the table alone.
TEST_P(PsServiceTest, StepAppliesThePushAndPullsTheResult) {
  Start("async", 2);
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
  std::vector<kernels::Tensor> before, after, again;
  std::vector<PsClient::DenseVar> dense0, dense1, dense2;
  std::vector<PsClient::SparseVar> sparse0, sparse1, sparse2;
  AllVariables(&before, &dense0, &sparse0);
  AllVariables(&after, &dense1, &sparse1);
  AllVariables(&again, &dense2, &sparse2);
  ASSERT_TRUE(client.Pull(dense0, sparse0, 0).ok());

  StatusOr<PsClient::PushResult> r = client.Step(
      Gradients(1.0f, 2, /*dense_too=*/true), 32, 0.5, &dense1, &sparse1,
      /*sync=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->global_step, 1);
  for (size_t v = 0; v < layout_.size(); ++v) {
    ASSERT_EQ(before[v].size(), after[v].size()) << layout_[v].name;
    const float step = layout_[v].trainable ? kLearningRate : 0.0f;
    for (int64_t i = 0; i < before[v].size(); ++i) {
      ASSERT_FLOAT_EQ(after[v][i], before[v][i] - step)
          << layout_[v].name << "[" << i << "]";
    }
  }

  // The table alone fits a unary call; the dense values stay as they were.
  r = client.Step(Gradients(2.0f, 2, /*dense_too=*/false), 32, 0.5, &dense2,
                  &sparse2, false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->global_step, 2);
  for (size_t v = 0; v < layout_.size(); ++v) {
    const float step = layout_[v].sparse ? 2 * kLearningRate : 0.0f;
    for (int64_t i = 0; i < after[v].size(); ++i) {
      ASSERT_FLOAT_EQ(again[v][i], after[v][i] - step)
          << layout_[v].name << "[" << i << "]";
    }
  }
}

// Sync mode: a Step's pull waits for the step its push completes, and a
// second push of the same step is dropped as stale.
TEST_P(PsServiceTest, SyncStepsAdvanceOnePerPushAndDropStalePushes) {
  Start("sync", 2);
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
  std::vector<kernels::Tensor> values;
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  AllVariables(&values, &dense, &sparse);
  ASSERT_TRUE(client.Pull(dense, sparse, 0).ok());
  for (int k = 1; k <= 3; ++k) {
    StatusOr<PsClient::PushResult> r = client.Step(
        Gradients(0.1f, 2, false), 8, 0.1, &dense, &sparse, /*sync=*/true);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->applied);
    EXPECT_EQ(r->global_step, k);
    EXPECT_EQ(client.steps(), (std::vector<int64_t>{k, k}));
  }
  // A client still at step 0 pushes gradients of an applied step.
  PsClient late(addresses_, creds_, 0, std::chrono::seconds(30));
  StatusOr<PsClient::PushResult> r =
      late.Step(Gradients(0.1f, 2, false), 8, 0.1, nullptr, nullptr, true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->applied);
  EXPECT_EQ(r->global_step, 3);
}

// The task's stop flag (SIGTERM) cuts a Step in flight short: a sync step
// that waits for a worker that never pushes ends Cancelled at once, not at
// its deadline. A call begun once the flag is set still runs (a stopping
// chief pulls its last checkpoint).
TEST_P(PsServiceTest, TheStopFlagCutsACallInFlightShort) {
  Start("sync", 2, "sgd", "", /*num_workers=*/2);
  std::atomic<bool> stop{false};
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(120), &stop);
  std::vector<kernels::Tensor> values;
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  AllVariables(&values, &dense, &sparse);
  ASSERT_TRUE(client.Pull(dense, sparse, 0).ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  StatusOr<PsClient::PushResult> r = client.Step(
      Gradients(0.1f, 2, false), 8, 0.1, &dense, &sparse, /*sync=*/true);
  const auto took = std::chrono::steady_clock::now() - start;
  stopper.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_THAT(std::string(Message(r.status())),
              ::testing::HasSubstr("cancelled, the task is stopping"));
  // Far from the 120 s deadline: the stop flag ended it.
  EXPECT_LT(took, std::chrono::seconds(60));

  Status pulled = client.Pull(dense, sparse, 0);
  EXPECT_TRUE(pulled.ok()) << pulled;
}

// A worker that is stopping does not wait for a PS that is gone (its chief
// sent it home, or it was killed): WorkerDone and a pull fail at once
// instead of waiting for it to come back until their deadline.
TEST_P(PsServiceTest, AStoppingWorkerDoesNotWaitForAGonePs) {
  Start("sync", 1);
  const std::vector<std::string> gone = addresses_;
  Stop();
  std::atomic<bool> stop{true};
  PsClient client(gone, creds_, 0, std::chrono::seconds(120), &stop);
  const auto start = std::chrono::steady_clock::now();
  Status done = client.WorkerDone();
  EXPECT_EQ(done.code(), absl::StatusCode::kUnavailable) << done;
  Status pulled = client.Pull({}, {}, 0);
  EXPECT_EQ(pulled.code(), absl::StatusCode::kUnavailable) << pulled;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

// A caller with a deadline of its own (a worker waiting for a lost PS
// within train.coordinator_timeout): a call to a PS that does not answer
// (its port closed: the call waits for it to be ready) ends by that
// deadline, not after the call's timeout of 120 s.
TEST_P(PsServiceTest, NotAfterEndsACallByItsDeadlineWhateverTheTimeout) {
  Start("sync", 1);
  const std::vector<std::string> gone = addresses_;
  Stop();
  PsClient client(gone, creds_, 0, std::chrono::seconds(120));
  const auto start = std::chrono::steady_clock::now();
  client.NotAfter(start + std::chrono::seconds(1));
  Status pulled = client.Pull({}, {}, 0);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(pulled.ok());
  EXPECT_GE(took, std::chrono::milliseconds(900)) << pulled;
  EXPECT_LT(took, std::chrono::seconds(10)) << pulled;
}

// The chief's Shutdown at the end of a run: a PS that already went (it
// heard the run end from its heartbeats first) counts as sent home, and the
// others are.
TEST_P(PsServiceTest, ShutdownCountsAGonePsAsSentHome) {
  Start("sync", 2);
  const std::vector<std::string> addresses = addresses_;
  servers_[0]->Shutdown(std::chrono::system_clock::now());
  PsClient client(addresses, creds_, 0, std::chrono::seconds(120));
  const auto start = std::chrono::steady_clock::now();
  Status st = client.Shutdown("the run finished");
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(services_[1]->WaitForShutdown(std::chrono::milliseconds(0)));
}

// A control call takes a few KB at most, while a step's messages may take
// megabytes: a Shutdown with a longer reason is refused before it acts,
// and the PS serves on.
TEST_P(PsServiceTest, AControlCallLargerThanItsLimitIsRefused) {
  Start("sync", 1);
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(10));
  Status st = client.Shutdown(std::string(rpc::kControlMaxRequestBytes, 'x'));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_NE(Message(st).find("Shutdown"), std::string_view::npos) << st;
  EXPECT_FALSE(services_[0]->WaitForShutdown(std::chrono::milliseconds(0)));
  st = client.Shutdown("the run finished");
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_TRUE(services_[0]->WaitForShutdown(std::chrono::milliseconds(0)));
}

// A parameter server started from a checkpoint holds its rows of every
// variable and optimizer slot as they were, and the global step.
TEST_P(PsServiceTest, RestoresItsPartitionOfACheckpoint) {
  Start("async", 2, "adagrad");
  StatusOr<std::unique_ptr<kernels::Optimizer>> adagrad =
      MakeOptimizer(*job_.train.optimizer);
  ASSERT_TRUE(adagrad.ok()) << adagrad.status();
  std::vector<kernels::Tensor> saved, restored;
  std::vector<kernels::OptimizerState> saved_states, restored_states;
  {
    PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(client
                      .Step(Gradients(0.25f * float(k + 1), 2, true), 8, 0.1,
                            nullptr, nullptr, false)
                      .ok());
    }
    std::vector<PsClient::DenseVar> dense;
    std::vector<PsClient::SparseVar> sparse;
    AllVariables(&saved, &dense, &sparse, &saved_states, adagrad->get());
    ASSERT_TRUE(client.Pull(dense, sparse, 0, /*slots=*/true).ok());
  }
  // The checkpoint the chief would write.
  StatusOr<FeatureLayer> layer =
      FeatureLayer::Create(job_.schema, job_.features, *job_.model);
  ASSERT_TRUE(layer.ok());
  StatusOr<std::unique_ptr<Model>> model =
      Model::Create(*layer, *job_.model, 7);
  ASSERT_TRUE(model.ok());
  for (size_t v = 0; v < layout_.size(); ++v) {
    (*model)->variables()[v].value = saved[v].Clone();
  }
  TrainState state;
  state.global_step = 3;
  const std::string path = dir_.Join("checkpoint.dtf");
  ASSERT_TRUE(MakeCheckpoint(*layer, **model, saved_states, state, "")
                  .WriteFile(path)
                  .ok());
  Stop();

  Start("async", 2, "adagrad", path);
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  AllVariables(&restored, &dense, &sparse, &restored_states, adagrad->get());
  ASSERT_TRUE(client.Pull(dense, sparse, 0, true).ok());
  EXPECT_EQ(client.steps(), (std::vector<int64_t>{3, 3}));
  for (size_t v = 0; v < layout_.size(); ++v) {
    ASSERT_EQ(restored[v].size(), saved[v].size());
    for (int64_t i = 0; i < saved[v].size(); ++i) {
      ASSERT_EQ(restored[v][i], saved[v][i])
          << layout_[v].name << "[" << i << "]";
    }
    if (!layout_[v].trainable) continue;
    ASSERT_GT(saved_states[v].num_slots(), 0);
    EXPECT_EQ(restored_states[v].step(), 3) << layout_[v].name;
    for (int k = 0; k < saved_states[v].num_slots(); ++k) {
      const kernels::Tensor& a = saved_states[v].slot(k);
      const kernels::Tensor& b = restored_states[v].slot(k);
      for (int64_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(b[i], a[i])
            << layout_[v].name << "/" << saved_states[v].slot_name(k);
      }
    }
  }
}

// A checkpoint of another model is refused, naming the file and variable.
TEST_P(PsServiceTest, RefusesACheckpointOfAnotherModel) {
  const std::string path = dir_.Join("other.dtf");
  Bundle bundle;
  bundle.AddInt64s("train/global_step", std::vector<int64_t>{1});
  ASSERT_TRUE(bundle.WriteFile(path).ok());
  dtf::testing::WriteFile(dir_.Join("job.toml"), JobText("async"));
  StatusOr<JobFile> job = LoadJobFile(dir_.Join("job.toml"));
  ASSERT_TRUE(job.ok());
  PsOptions o;
  o.restore_from = path;
  StatusOr<std::unique_ptr<PsService>> ps = PsService::Create(*job, o);
  ASSERT_EQ(ps.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(Message(ps.status()).find(path), std::string::npos) << ps.status();
  EXPECT_NE(Message(ps.status()).find("does not match the job"),
            std::string::npos);
}

// A gradient for a variable the PS does not hold is refused, and named.
TEST_P(PsServiceTest, StepRefusesUnknownVariables) {
  Start("async", 1);
  PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
  std::vector<std::vector<rpc::TensorPiece>> pieces(1);
  const float g = 1;
  AppendDensePieces("no/such/variable", {1}, &g, 1, 1, 0, &pieces[0]);
  StatusOr<PsClient::PushResult> r =
      client.Step(std::move(pieces), 1, 0, nullptr, nullptr, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Message(r.status()).find("no/such/variable"), std::string::npos)
      << r.status();
  EXPECT_NE(Message(r.status()).find("ps:0"), std::string::npos);
}

// The pushed pieces are checked, in checked arithmetic, before anything
// changes. A piece claiming about 2^62 rows from row offset about 2^62 once
// passed both checks (rows x cols x 4 and first + rows wrapped around) and
// was added outside the gradient buffer.
TEST_P(PsServiceTest, AnOverflowingPieceIsRefused) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1);
    const VariableSpec* dense_var = nullptr;
    for (const VariableSpec& spec : layout_) {
      if (spec.trainable && !spec.sparse) dense_var = &spec;
    }
    ASSERT_NE(dense_var, nullptr);
    PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
    std::vector<std::vector<rpc::TensorPiece>> pieces(1);
    rpc::TensorPiece& piece = pieces[0].emplace_back();
    piece.set_name(dense_var->name);
    for (int64_t d : dense_var->shape) piece.add_shape(d);
    // rows x cols x 4 wraps to 0 bytes with cols a power of two.
    piece.set_rows(int64_t{1} << 62);
    piece.set_row_offset((int64_t{1} << 62) + 1);
    StatusOr<PsClient::PushResult> r =
        client.Step(std::move(pieces), 1, 0, nullptr, nullptr,
                    std::string_view(mode) == "sync");
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_NE(Message(r.status()).find(dense_var->name), std::string::npos)
        << r.status();
    Stop();
  }
}

// A piece of a sparse variable without its row ids once passed the checks
// (rows x cols x 4 bytes) and was read into a buffer sized by its ids.
TEST_P(PsServiceTest, ASparsePieceWithoutIdsIsRefused) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1);
    const VariableSpec* sparse_var = nullptr;
    for (const VariableSpec& spec : layout_) {
      if (spec.trainable && spec.sparse) sparse_var = &spec;
    }
    ASSERT_NE(sparse_var, nullptr);
    PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
    std::vector<std::vector<rpc::TensorPiece>> pieces(1);
    rpc::TensorPiece& piece = pieces[0].emplace_back();
    piece.set_name(sparse_var->name);
    for (int64_t d : sparse_var->shape) piece.add_shape(d);
    piece.set_rows(2);
    piece.set_values(
        std::string(size_t(2 * PieceCols(sparse_var->shape) * 4), '\0'));
    StatusOr<PsClient::PushResult> r =
        client.Step(std::move(pieces), 1, 0, nullptr, nullptr,
                    std::string_view(mode) == "sync");
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    EXPECT_NE(Message(r.status()).find(sparse_var->name), std::string::npos)
        << r.status();
    Stop();
  }
}

// A push with one good piece and one bad one changes nothing, in either
// mode: sync pushes are checked on arrival, not when the step is applied.
TEST_P(PsServiceTest, APushWithABadPieceChangesNothing) {
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    Start(mode, 1);
    const bool sync = std::string_view(mode) == "sync";
    PsClient client(addresses_, creds_, 0, std::chrono::seconds(30));
    std::vector<kernels::Tensor> before, after;
    std::vector<PsClient::DenseVar> dense, dense_after;
    std::vector<PsClient::SparseVar> sparse, sparse_after;
    AllVariables(&before, &dense, &sparse);
    ASSERT_TRUE(client.Pull(dense, sparse, 0).ok());
    std::vector<std::vector<rpc::TensorPiece>> pieces =
        Gradients(0.5f, 1, /*dense_too=*/true);
    ASSERT_GE(pieces[0].size(), 2u);
    // The last piece's rows lie past the end of its variable.
    rpc::TensorPiece& bad = pieces[0].back();
    if (bad.ids_size() > 0) {
      bad.set_ids(0, int64_t{1} << 40);
    } else {
      bad.set_row_offset(bad.row_offset() + 1);
    }
    StatusOr<PsClient::PushResult> r =
        client.Step(std::move(pieces), 1, 0, nullptr, nullptr, sync);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
    AllVariables(&after, &dense_after, &sparse_after);
    ASSERT_TRUE(client.Pull(dense_after, sparse_after, 0).ok());
    EXPECT_EQ(client.steps(), (std::vector<int64_t>{0}));
    for (size_t v = 0; v < before.size(); ++v) {
      ASSERT_EQ(before[v].size(), after[v].size());
      for (int64_t i = 0; i < before[v].size(); ++i) {
        ASSERT_EQ(before[v][i], after[v][i])
            << layout_[v].name << "[" << i << "]";
      }
    }
    // The next good push is applied as the first step.
    StatusOr<PsClient::PushResult> good =
        client.Step(Gradients(0.5f, 1, true), 1, 0, nullptr, nullptr, sync);
    ASSERT_TRUE(good.ok()) << good.status();
    EXPECT_TRUE(good->applied);
    EXPECT_EQ(good->global_step, 1);
    Stop();
  }
}

// A pull that outlives its deadline (a sync step that never comes) fails
// with DEADLINE_EXCEEDED and ends its Session stream; the next call opens a
// new one and is answered.
TEST_P(PsServiceTest, AStreamPastItsDeadlineIsReplacedByTheNextCall) {
  Start("sync", 1);
  PsClient client(addresses_, creds_, 0, std::chrono::milliseconds(300));
  std::vector<kernels::Tensor> values;
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  AllVariables(&values, &dense, &sparse);
  ASSERT_TRUE(client.Pull(dense, sparse, 0).ok());
  const auto start = std::chrono::steady_clock::now();
  Status late = client.Pull(dense, sparse, /*min_step=*/1);
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(300));
  Status again = client.Pull(dense, sparse, 0);
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_EQ(client.steps(), (std::vector<int64_t>{0}));
  // The step the late pull waited for comes with the next push.
  StatusOr<PsClient::PushResult> r = client.Step(
      Gradients(0.5f, 1, true), 1, 0, &dense, &sparse, /*sync=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(client.steps(), (std::vector<int64_t>{1}));
}

INSTANTIATE_TEST_SUITE_P(Transports, PsServiceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Plaintext";
                         });

}  // namespace
}  // namespace dtf::runtime
