#include "lib/launch/spark/spark_preflight.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "lib/base/build_config.h"
#include "lib/base/strings.h"
#include "lib/launch/pack/env_cache.h"
#include "lib/launch/pack/pack_job.h"
#include "lib/launch/spark/spark_plan.h"

namespace dtf::launch::spark {
namespace {

namespace fs = std::filesystem;

// "<file>:<line>:<col>" of a [spark] key, else the profile's file.
std::string SparkKeyWhere(const Profile& profile, const std::string& key) {
  const SparkProfile& sp = SparkTableOf(profile);
  const auto it = sp.where.find(key);
  return it != sp.where.end() ? it->second : profile.source;
}

// "" when a TCP connection to host:port opens within timeout_ms, else why.
std::string TryConnect(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return StrCat("cannot resolve ", host, ": ", gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int n = ::poll(&p, 1, timeout_ms);
        if (n == 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(err);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    ::close(fd);
    if (err == 0) {
      ::freeaddrinfo(found);
      return "";
    }
    why = err == ETIMEDOUT ? StrCat("no answer in ", timeout_ms, " ms")
                           : std::string(std::strerror(err));
  }
  ::freeaddrinfo(found);
  return why;
}

}  // namespace

StatusOr<std::string> FindSparkSubmit(const Profile& profile) {
  const SparkProfile& sp = SparkTableOf(profile);
  const std::string where = SparkKeyWhere(profile, "spark.spark_submit");
  const auto usable = [](const std::string& path) {
    return ::access(path.c_str(), X_OK) == 0 && !fs::is_directory(path);
  };
  if (sp.spark_submit.find('/') != std::string::npos) {
    if (usable(sp.spark_submit)) return sp.spark_submit;
    return FailedPreconditionError(StrCat(
        where, ": spark.spark_submit: ", QuoteForMessage(sp.spark_submit),
        " is not an executable file"));
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path == nullptr ? "/usr/bin:/bin" : path;
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? "" : dirs.substr(colon + 1);
    if (dir.empty()) continue;
    const std::string candidate = StrCat(dir, "/", sp.spark_submit);
    if (usable(candidate)) return candidate;
  }
  return FailedPreconditionError(
      StrCat(where, ": spark.spark_submit: ", QuoteForMessage(sp.spark_submit),
             " is not in PATH (install Spark, e.g. pip install pyspark, or set "
             "spark.spark_submit to its path)"));
}

Status CheckMasterReachable(const Profile& profile, int timeout_ms) {
  const SparkProfile& sp = SparkTableOf(profile);
  const auto master = StandaloneMaster(sp.master);
  if (!master) return OkStatus();
  const std::string why = TryConnect(master->first, master->second, timeout_ms);
  if (why.empty()) return OkStatus();
  return UnavailableError(StrCat("the Spark master ", sp.master, " (",
                                 SparkKeyWhere(profile, "spark.master"),
                                 ": spark.master) is unreachable: ", why));
}

Status PackSparkArchives(PlanRequest* r, std::string* note) {
  const std::string out = PackDir(*r);
  const char* path = std::getenv("PATH");
  DTF_ASSIGN_OR_RETURN(
      const pack::PackResult env,
      pack::PackEnvCached(out, path == nullptr ? "/usr/bin:/bin" : path, note));
  r->env_id = env.archive.sha256.substr(0, 16);
  // A batch plan's tasks run their commands on the launcher's files
  // (shared storage): only the runtime is shipped.
  if (r->batch_command != nullptr) return OkStatus();
  pack::PackJobOptions job;
  job.job = r->job;
  job.with_data = false;
  job.dtf_version = kVersion;
  job.out_dir = out;
  DTF_ASSIGN_OR_RETURN(const pack::PackResult j, pack::PackJob(job));
  r->job_id = j.archive.sha256.substr(0, 16);
  r->job_entry = j.manifest.entry;
  return OkStatus();
}

}  // namespace dtf::launch::spark
