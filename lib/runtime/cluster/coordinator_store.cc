#include "lib/runtime/cluster/coordinator_store.h"

#include <algorithm>
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
                                   const std::atomic<bool>* cancel)
    : chief_(std::move(chief)),
      credentials_(credentials),
      task_(std::move(task)),
      cancel_(cancel),
      stub_(NewChiefStub(chief_, credentials_)) {}

Status CoordinatorStore::Set(const std::string& key, std::string_view value) {
  rpc::KvSetRequest request;
  request.set_task(task_);
  request.set_key(key);
  request.set_value(std::string(value));
  rpc::KvSetResponse response;
  auto context = MakeClientContext(credentials_, std::chrono::seconds(30));
  return FromGrpc(stub_->KvSet(context.get(), request, &response),
                  StrCat("the chief (", chief_, "): KvSet ", key));
}

StatusOr<std::string> CoordinatorStore::Get(const std::string& key,
                                            std::chrono::milliseconds timeout) {
  rpc::KvGetRequest request;
  request.set_task(task_);
  request.set_key(key);
  const auto deadline = StoreClock::now() + timeout;
  std::chrono::milliseconds pause(10);
  Status last;
  while (true) {
    if (cancel_ != nullptr && cancel_->load()) {
      return CancelledError(StrCat(task_,
                                   ": stopped while waiting for the key ", key,
                                   " from the chief (", chief_, ")"));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - StoreClock::now());
    if (left.count() <= 0) break;
    auto context = MakeClientContext(
        credentials_,
        std::min<std::chrono::milliseconds>(left, std::chrono::seconds(5)));
    rpc::KvGetResponse response;
    last = FromGrpc(stub_->KvGet(context.get(), request, &response),
                    StrCat("the chief (", chief_, "): KvGet ", key));
    if (last.ok()) return std::move(*response.mutable_value());
    if (last.code() != StatusCode::kNotFound &&
        last.code() != StatusCode::kUnavailable &&
        last.code() != StatusCode::kDeadlineExceeded) {
      return last;
    }
    std::this_thread::sleep_for(pause);
    pause = StoreNextPause(pause);
  }
  return DeadlineExceededError(
      StrCat(task_, ": no rank set the key ", key, " at the chief (", chief_,
             ") within ", timeout.count(), " ms; last: ", Message(last)));
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
