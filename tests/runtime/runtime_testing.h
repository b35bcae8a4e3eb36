// Test helpers for lib/runtime: the example jobs (examples/<name>/dtf.toml)
// copied into a temporary directory with the sample data's real paths, and
// their TFRecord shards written there; loopback ports held for servers.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>

#include "gtest/gtest.h"
#include "lib/base/status.h"
#include "lib/base/strings.h"
#include "lib/data/gen_records.h"
#include "lib/data/job_file.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime::testing {

// examples/<name>/dtf.toml with `edits` applied (each a {from, to} text
// replacement that must match), written to dir/dtf.toml.
inline StatusOr<std::string> WriteExampleJob(
    std::string_view name, const dtf::testing::TempDir& dir,
    std::initializer_list<std::pair<std::string_view, std::string_view>> edits =
        {}) {
  std::string text = dtf::testing::ReadFile(
      StrCat(DTF_SOURCE_DIR, "/examples/", name, "/dtf.toml"));
  if (text.empty()) return NotFoundError(StrCat("no example job ", name));
  auto replace = [&](std::string_view from, std::string_view to) -> Status {
    size_t at = text.find(from);
    if (at == std::string::npos) {
      return NotFoundError(
          StrCat("example job ", name, " has no \"", from, "\""));
    }
    while (at != std::string::npos) {
      text.replace(at, from.size(), to);
      at = text.find(from, at + to.size());
    }
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(replace("../../../shared", DTF_SHARED_DIR));
  for (const auto& [from, to] : edits) DTF_RETURN_IF_ERROR(replace(from, to));
  const std::string path = dir.Join("dtf.toml");
  dtf::testing::WriteFile(path, text);
  return path;
}

// Loads the job at `path` and writes its shards, as `dtf gen-records --job`.
inline StatusOr<JobFile> LoadJobWithRecords(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(path));
  for (GenRecordsOptions& options : GenRecordsOptionsFromJob(job)) {
    options.threads = 2;
    options.overwrite = true;
    DTF_RETURN_IF_ERROR(GenRecords(options).status());
  }
  return job;
}

// A loopback port held from construction to destruction by a socket bound
// with SO_REUSEADDR|SO_REUSEPORT and never listened on: no other program
// can take it, while a gRPC server (which binds with SO_REUSEPORT, as Serve
// does) can. So a port is chosen for a task before the task starts, with no
// window in which it is free. port() is 0 when none could be held.
// Move-only.
class HeldPort {
 public:
  HeldPort() {
    // A port 0 bind with SO_REUSEPORT may share a port that another such
    // socket holds; an exclusive bind first finds one nobody uses.
    for (int attempt = 0; attempt < 20 && fd_ < 0; ++attempt) {
      const int probe = Bind(0, /*reuse_port=*/false);
      if (probe < 0) return;
      const int port = PortOf(probe);
      ::close(probe);
      fd_ = Bind(port, /*reuse_port=*/true);
    }
    if (fd_ >= 0) port_ = PortOf(fd_);
  }
  HeldPort(HeldPort&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  ~HeldPort() {
    if (fd_ >= 0) ::close(fd_);
  }

  int port() const { return port_; }
  std::string address() const { return StrCat("127.0.0.1:", port_); }

 private:
  static int Bind(int port, bool reuse_port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const int one = 1;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if ((reuse_port &&
         (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
          ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) !=
              0)) ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  static int PortOf(int fd) {
    sockaddr_in sa{};
    socklen_t length = sizeof(sa);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length) != 0) {
      return 0;
    }
    return ntohs(sa.sin_port);
  }

  int fd_ = -1;
  int port_ = 0;
};

}  // namespace dtf::runtime::testing
