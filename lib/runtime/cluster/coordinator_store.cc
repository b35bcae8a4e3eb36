#include "lib/runtime/cluster/coordinator_store.h"

#include <algorithm>
#include <functional>
#include <thread>
#include <utility>

#include "lib/base/strings.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/ps/rpc_auth.h"

namespace dtf::runtime {
namespace {

using StoreClock = std::chrono::steady_clock;

// Between two asks for a key not set yet: short at first (the ranks start
// together), then up to 200 ms.
std::chrono::milliseconds StoreNextPause(std::chrono::milliseconds pause) {
  return std::min<std::chrono::milliseconds>(pause * 2,
                                             std::chrono::milliseconds(200));
}

}  // namespace

CoordinatorStore::CoordinatorStore(std::string chief,
                                   const rpc::RunCredentials& credentials,
                                   std::string task,
                                   const std::atomic<bool>* cancel,
                                   uint64_t incarnation,
                                   std::chrono::milliseconds set_timeout)
    : chief_(std::move(chief)),
      credentials_(credentials),
      task_(std::move(task)),
      cancel_(cancel),
      incarnation_(incarnation),
      set_timeout_(set_timeout),
      stub_(NewChiefStub(chief_, credentials_)) {}

Status CoordinatorStore::Ask(
    const std::string& what, const std::string& unmet,
    std::chrono::milliseconds timeout, bool again_if_not_found,
    const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  const auto deadline = StoreClock::now() + timeout;
  std::chrono::milliseconds pause(10);
  Status last;
  while (true) {
    if (cancel_ != nullptr && cancel_->load()) {
      return CancelledError(StrCat(task_, ": stopped while waiting for ", what,
                                   " at the chief (", chief_, ")"));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - StoreClock::now());
    if (left.count() <= 0) break;
    auto context = MakeClientContext(
        credentials_,
        std::min<std::chrono::milliseconds>(left, std::chrono::seconds(5)));
    last = FromGrpc(call(context.get()),
                    StrCat("the chief (", chief_, "): ", what));
    if (last.ok()) return last;
    const bool again =
        last.code() == StatusCode::kUnavailable ||
        last.code() == StatusCode::kDeadlineExceeded ||
        (again_if_not_found && last.code() == StatusCode::kNotFound);
    if (!again) return last;
    std::this_thread::sleep_for(pause);
    pause = StoreNextPause(pause);
  }
  return DeadlineExceededError(StrCat(task_, ": ", unmet, " at the chief (",
                                      chief_, ") within ", timeout.count(),
                                      " ms; last: ", Message(last)));
}

Status CoordinatorStore::Set(const std::string& key, std::string_view value) {
  rpc::KvSetRequest request;
  request.set_task(task_);
  request.set_key(key);
  request.set_value(std::string(value));
  request.set_incarnation(incarnation_);
  return Ask(StrCat("KvSet ", key), StrCat("no answer to KvSet ", key),
             set_timeout_, /*again_if_not_found=*/false,
             [&](grpc::ClientContext* context) {
               rpc::KvSetResponse response;
               return stub_->KvSet(context, request, &response);
             });
}

StatusOr<std::string> CoordinatorStore::Get(const std::string& key,
                                            std::chrono::milliseconds timeout) {
  rpc::KvGetRequest request;
  request.set_task(task_);
  request.set_key(key);
  request.set_incarnation(incarnation_);
  rpc::KvGetResponse response;
  DTF_RETURN_IF_ERROR(
      Ask(StrCat("KvGet ", key), StrCat("no rank set the key ", key), timeout,
          /*again_if_not_found=*/true, [&](grpc::ClientContext* context) {
            return stub_->KvGet(context, request, &response);
          }));
  return std::move(*response.mutable_value());
}

Status LocalCoordinatorStore::Set(const std::string& key,
                                  std::string_view value) {
  return service_->SetKey(key, value);
}

StatusOr<std::string> LocalCoordinatorStore::Get(
    const std::string& key, std::chrono::milliseconds timeout) {
  const auto deadline = StoreClock::now() + timeout;
  std::chrono::milliseconds pause(10);
  while (true) {
    if (std::optional<std::string> value = service_->GetKey(key)) {
      return *std::move(value);
    }
    if (cancel_ != nullptr && cancel_->load()) {
      return CancelledError(StrCat("stopped while waiting for the key ", key));
    }
    if (StoreClock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = StoreNextPause(pause);
  }
  return DeadlineExceededError(
      StrCat("no rank set the key ", key, " within ", timeout.count(), " ms"));
}

}  // namespace dtf::runtime
