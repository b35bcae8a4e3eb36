#include "lib/base/storage_mirror.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "lib/base/storage.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

bool Hidden(const std::string& relative) {
  size_t start = 0;
  while (start < relative.size()) {
    if (relative[start] == '.') return true;
    const size_t slash = relative.find('/', start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return false;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

StatusOr<std::unique_ptr<StorageMirror>> StorageMirror::Open(
    const std::string& remote, std::vector<std::string> last_names) {
  std::unique_ptr<StorageMirror> mirror(new StorageMirror);
  mirror->remote_ = remote;
  while (mirror->remote_.ends_with('/')) mirror->remote_.pop_back();
  mirror->last_names_ = std::move(last_names);
  DTF_ASSIGN_OR_RETURN(mirror->local_, LocalStagingDir::Create("output"));
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> names,
                       DownloadTree(mirror->remote_, mirror->local_.path()));
  // What is there now is the remote's: not uploaded again unless changed.
  for (const std::string& name : names) {
    struct stat st;
    const std::string path = JoinPath(mirror->local_.path(), name);
    if (::stat(path.c_str(), &st) == 0) {
      mirror->seen_[name] = {
          static_cast<uint64_t>(st.st_size),
          st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
    }
  }
  return mirror;
}

StorageMirror::~StorageMirror() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status StorageMirror::Sync() {
  std::lock_guard<std::mutex> one(sync_mu_);
  const std::string& local = local_.path();
  std::map<std::string, Seen> now;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(local, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string relative = it->path().string().substr(local.size() + 1);
    if (Hidden(relative)) continue;
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0) continue;  // removed meanwhile
    now[relative] = {static_cast<uint64_t>(st.st_size),
                     st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
  }
  std::map<std::string, Seen> seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = seen_;
  }
  std::vector<std::string> changed;
  for (const auto& [name, state] : now) {
    auto old = seen.find(name);
    if (old == seen.end() || old->second.size != state.size ||
        old->second.mtime_ns != state.mtime_ns) {
      changed.push_back(name);
    }
  }
  auto last = [&](const std::string& name) {
    return std::find(last_names_.begin(), last_names_.end(), BaseName(name)) !=
           last_names_.end();
  };
  std::stable_partition(changed.begin(), changed.end(),
                        [&](const std::string& n) { return !last(n); });
  for (const std::string& name : changed) {
    Status copied = CopyFile(JoinPath(local, name), JoinPath(remote_, name));
    // A file replaced or removed while being read is taken at the next Sync.
    if (!copied.ok() && fs::exists(JoinPath(local, name), ec)) return copied;
    if (!copied.ok()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    seen_[name] = now[name];
  }
  for (const auto& [name, state] : seen) {
    if (now.contains(name)) continue;
    DTF_RETURN_IF_ERROR(RemoveFile(JoinPath(remote_, name)));
    std::lock_guard<std::mutex> lock(mu_);
    seen_.erase(name);
  }
  return OkStatus();
}

void StorageMirror::SyncEvery(std::chrono::milliseconds interval) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!wake_.wait_for(lock, interval, [&] { return stop_; })) {
      lock.unlock();
      Status status = Sync();
      lock.lock();
      if (!status.ok()) last_error_ = status;
    }
  });
}

Status StorageMirror::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace dtf
