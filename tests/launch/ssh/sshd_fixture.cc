#include "tests/launch/ssh/sshd_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "lib/base/strings.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::ssh::testing {
namespace {

constexpr char kSshd[] = "/usr/sbin/sshd";

std::string Script() {
  return StrCat(DTF_SOURCE_DIR, "/tests/launch/ssh/sshd.sh");
}

}  // namespace

std::string SshdUnavailableReason() {
  if (access(kSshd, X_OK) != 0) return StrCat(kSshd, " is not installed");
  if (system("command -v ssh-keygen >/dev/null 2>&1") != 0) {
    return "ssh-keygen is not installed";
  }
  return "";
}

Status RunSshdScript(const std::string& args) {
  std::string command =
      StrCat("bash ", ShellQuote(Script()), " ", args, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return InternalError(StrCat("cannot run ", command));
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  int status = pclose(pipe);
  if (status != 0) {
    return InternalError(
        StrCat("sshd.sh ", args, " failed (", status, "): ", output));
  }
  return OkStatus();
}

ClosedPort::ClosedPort(const std::string& address) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
  socklen_t length = sizeof(sa);
  if (fd_ >= 0 &&
      bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &length) == 0) {
    port_ = ntohs(sa.sin_port);
  }
}

ClosedPort::~ClosedPort() {
  if (fd_ >= 0) close(fd_);
}

std::string LocalUser() {
  struct passwd* pw = getpwuid(getuid());
  return pw != nullptr ? pw->pw_name : "root";
}

StatusOr<std::unique_ptr<Sshd>> Sshd::Start(const std::string& dir,
                                            const std::string& name,
                                            const std::string& address,
                                            bool known, bool sftp) {
  DTF_RETURN_IF_ERROR(RunSshdScript(StrCat("keys ", ShellQuote(dir))));
  std::unique_ptr<Sshd> sshd(new Sshd(dir, name, address, 0));
  sshd->sftp_ = sftp;
  DTF_RETURN_IF_ERROR(sshd->Restart());
  if (known) DTF_RETURN_IF_ERROR(sshd->AddKnownHost());
  return sshd;
}

Sshd::~Sshd() { (void)Stop(); }

std::string Sshd::Args(const std::string& command, bool with_address) const {
  std::string args =
      StrCat(command, " ", ShellQuote(dir_), " ", ShellQuote(name_));
  if (with_address) StrAppend(&args, " ", address_, " ", port_);
  return args;
}

Status Sshd::Stop() {
  if (!running_) return OkStatus();
  running_ = false;
  return RunSshdScript(Args("stop", false));
}

Status Sshd::Restart() {
  DTF_RETURN_IF_ERROR(Stop());
  DTF_RETURN_IF_ERROR(
      RunSshdScript(StrCat(Args("start", true), sftp_ ? "" : " no-sftp")));
  running_ = true;
  if (port_ == 0) {
    const std::string file = StrCat(dir_, "/", name_, "/port");
    port_ = std::atoi(dtf::testing::ReadFile(file).c_str());
    if (port_ <= 0)
      return InternalError(StrCat("sshd.sh left no port in ", file));
  }
  return OkStatus();
}

Status Sshd::NewHostKey() { return RunSshdScript(Args("new-host-key", false)); }

Status Sshd::AddKnownHost() { return RunSshdScript(Args("known-host", true)); }

Target Sshd::target() const {
  Target target;
  target.host = address_;
  target.port = port_;
  target.user = LocalUser();
  target.identity_file = dir_ + "/id_ed25519";
  target.known_hosts = dir_ + "/known_hosts";
  target.config_file = "none";
  target.connect_timeout = std::chrono::seconds(5);
  return target;
}

std::string Sshd::host_public_key() const {
  return StrCat(dir_, "/", name_, "/ssh_host_ed25519_key.pub");
}

std::string Sshd::log_file() const {
  return StrCat(dir_, "/", name_, "/sshd.log");
}

}  // namespace dtf::launch::ssh::testing
