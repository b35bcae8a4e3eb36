// libFuzzer target for the parameter server's message handlers: arbitrary
// bytes decoded as a StepMessage, PushMessage or PullRequest and handed to a
// fresh ParamStore of a small job (ps_fuzz_job.h) through the functions
// PsService calls (ps_messages.h), twice, then WorkerDone and Tick. Nothing
// may crash, and a refused push must change nothing.
//
// The first byte picks the setting: bits 0-1 the message (0, 3: Step;
// 1: Push; 2: Pull), bit 2 sync mode, bit 3 two parameter servers (bit 4:
// this one is ps:1), bit 5 two workers, bit 6 (async) max_staleness = 0. The
// rest is the message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "lib/base/strings.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/ps_messages.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "proto/dtf.pb.h"
#include "tests/fuzz/ps_fuzz_job.h"

namespace dtf {
namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "ps_store_fuzz: %s\n", what);
  std::abort();
}

// Never waits: a pull for a step not yet applied is cancelled at once.
bool AlwaysCancelled() { return true; }

// Every row of every variable and slot, as the store gives them, and the
// global step.
std::string Snapshot(runtime::ParamStore& store,
                     const fuzzing::PsFuzzJob& job) {
  rpc::PullRequest request;
  for (const runtime::VariableSpec& v : job.layout) {
    if (v.sparse) {
      rpc::PullRequest::Sparse* s = request.add_sparse();
      s->set_name(v.name);
      s->set_all(true);
    } else {
      request.add_dense(v.name);
    }
  }
  request.set_slots(true);
  std::vector<rpc::TensorPiece> pieces;
  runtime::TensorPieceSink sink(&pieces);
  rpc::PullHeader header;
  Check(
      runtime::PullPieces(store, request, &header, sink, AlwaysCancelled).ok(),
      "a pull of every variable failed");
  // The header's map, in order: its own serialization has none.
  std::string out = std::to_string(header.global_step());
  const std::map<std::string, int64_t> slot_steps(header.slot_steps().begin(),
                                                  header.slot_steps().end());
  for (const auto& [name, step] : slot_steps) {
    out += StrCat(";", name, "=", step);
  }
  for (const rpc::TensorPiece& p : pieces) {
    Check(p.values().size() == size_t(p.rows()) *
                                   size_t(runtime::PieceCols(
                                       {p.shape().begin(), p.shape().end()})) *
                                   4,
          "a pulled piece's values do not fill its rows");
    out += p.SerializeAsString();
  }
  return out;
}

void CheckPulled(const std::vector<rpc::TensorPiece>& pieces) {
  for (const rpc::TensorPiece& p : pieces) {
    Check(p.ids_size() == 0 || p.ids_size() == p.rows(),
          "a pulled sparse piece names other rows than it holds");
  }
}

// Runs `message` (the bytes of one call) against `store` as PsService does;
// false when the bytes are no such message.
bool RunOnce(runtime::ParamStore& store, int kind, const uint8_t* data,
             size_t size, const fuzzing::PsFuzzJob& job, int* worker) {
  std::vector<runtime::PieceView> grads;
  std::vector<rpc::TensorPiece> pieces;
  runtime::TensorPieceSink sink(&pieces);
  rpc::PullHeader header;
  if (kind == 1) {
    rpc::PushMessage m;
    if (!m.ParseFromArray(data, int(size))) return false;
    // PsService refuses a push without its header before the store sees it.
    if (!m.has_header()) return true;
    *worker = m.header().worker();
    runtime::AppendPieceViews(m.gradients(), &grads);
    const std::string before = Snapshot(store, job);
    StatusOr<runtime::PushResult> r =
        runtime::PushGradients(store, m.header(), grads);
    if (!r.ok() || !r->applied) {
      Check(Snapshot(store, job) == before, "a refused push changed the PS");
    }
    return true;
  }
  if (kind == 2) {
    rpc::PullRequest m;
    if (!m.ParseFromArray(data, int(size))) return false;
    *worker = m.worker();
    if (runtime::PullPieces(store, m, &header, sink, AlwaysCancelled).ok()) {
      CheckPulled(pieces);
    }
    return true;
  }
  rpc::StepMessage m;
  if (!m.ParseFromArray(data, int(size))) return false;
  *worker = m.push().worker();
  runtime::AppendPieceViews(m.gradients(), &grads);
  if (runtime::RunStep(store, m, grads, &header, sink, AlwaysCancelled).ok()) {
    CheckPulled(pieces);
  }
  return true;
}

}  // namespace
}  // namespace dtf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtf;
  if (size < 1) return 0;
  // Strings that are not UTF-8 are refused by the parser, which logs each.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  static const fuzzing::PsFuzzJob async_job = fuzzing::LoadPsFuzzJob("async");
  static const fuzzing::PsFuzzJob fresh_job = [] {
    fuzzing::PsFuzzJob j = fuzzing::LoadPsFuzzJob("async");
    j.job.train.max_staleness = 0;
    return j;
  }();
  static const fuzzing::PsFuzzJob sync_job = fuzzing::LoadPsFuzzJob("sync");
  const uint8_t setting = data[0];
  const int kind = setting & 3;
  const fuzzing::PsFuzzJob& job = (setting & 4)    ? sync_job
                                  : (setting & 64) ? fresh_job
                                                   : async_job;
  runtime::StoreOptions options;
  options.num_ps = (setting & 8) ? 2 : 1;
  options.index = (setting & 8) && (setting & 16) ? 1 : 0;
  options.num_workers = (setting & 32) ? 2 : 1;
  StatusOr<std::unique_ptr<runtime::ParamStore>> store =
      runtime::ParamStore::Create(job.job, options);
  Check(store.ok(), "the store of the fuzz job was not made");
  int worker = 0;
  for (int round = 0; round < 2; ++round) {
    if (!RunOnce(**store, kind, data + 1, size - 1, job, &worker)) return 0;
  }
  (*store)->WorkerDone(worker);
  (*store)->Tick();
  Snapshot(**store, job);
  return 0;
}
