#include "lib/runtime/ps/ps_service.h"

#include <utility>

#include "lib/rpc/call.h"
#include "lib/runtime/ps/ps_messages.h"

namespace dtf::runtime {

PsService::PsService(std::unique_ptr<ParamStore> store,
                     rpc::RunCredentials credentials)
    : store_(std::move(store)), credentials_(std::move(credentials)) {}

PsService::~PsService() = default;

StatusOr<std::unique_ptr<PsService>> PsService::Create(
    const JobFile& job, const PsOptions& options) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ParamStore> store,
                       ParamStore::Create(job, options));
  return std::unique_ptr<PsService>(
      new PsService(std::move(store), options.credentials));
}

grpc::Status PsService::WorkerDone(grpc::ServerContext* context,
                                   const rpc::WorkerDoneRequest* request,
                                   rpc::WorkerDoneResponse*) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "WorkerDone");
      !st.ok()) {
    return st;
  }
  store_->WorkerDone(request->worker());
  return grpc::Status::OK;
}

grpc::Status PsService::Shutdown(grpc::ServerContext* context,
                                 const rpc::ShutdownRequest* request,
                                 rpc::ShutdownResponse*) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "Shutdown");
      !st.ok()) {
    return st;
  }
  store_->Shutdown(request->reason());
  return grpc::Status::OK;
}

grpc::Status PsService::SessionAddress(grpc::ServerContext* context,
                                       const rpc::SessionAddressRequest*,
                                       rpc::SessionAddressResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  response->set_port(session_port_);
  return grpc::Status::OK;
}

grpc::Status PsService::SaveShard(grpc::ServerContext* context,
                                  const rpc::SaveShardRequest* request,
                                  rpc::SaveShardResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  if (grpc::Status st =
          rpc::CheckRequestSize(request->ByteSizeLong(), "SaveShard");
      !st.ok()) {
    return st;
  }
  SaveShardRequest save;
  save.prefix = request->prefix();
  save.shard = request->shard();
  save.num_shards = request->num_shards();
  save.min_step = request->min_step();
  save.worker = request->worker();
  save.variables_only = request->variables_only();
  if (save.prefix.empty() || save.num_shards < 1 || save.shard < 0 ||
      save.shard >= save.num_shards) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "SaveShard: no prefix, or no shard of the checkpoint");
  }
  StatusOr<SaveShardResult> saved = store_->SaveShard(save);
  if (!saved.ok()) return rpc::ToGrpc(saved.status());
  response->set_global_step(saved->global_step);
  AppendWorkerPositions(saved->positions, response->mutable_worker_positions());
  for (auto& [key, entry] : saved->entries) {
    rpc::SaveShardResponse::Entry* e = response->add_entries();
    e->set_key(std::move(key));
    e->set_entry(std::move(entry));
  }
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
