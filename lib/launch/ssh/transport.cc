#include "lib/launch/ssh/transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

std::string HomeDirectory() {
  std::vector<char> buffer(16384);
  struct passwd entry;
  struct passwd* result = nullptr;
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &result) !=
          0 ||
      result == nullptr || result->pw_dir == nullptr) {
    return "";
  }
  return result->pw_dir;
}

Status SetOption(ssh_session session, ssh_options_e option, const void* value,
                 std::string_view label, std::string_view what) {
  if (ssh_options_set(session, option, value) < 0) {
    return InvalidArgumentError(
        StrCat(ErrorPrefix(label), "bad ", what, ": ", ssh_get_error(session)));
  }
  return OkStatus();
}

// Reads the OpenSSH client configuration the Target names.
Status ParseConfig(ssh_session session, const Target& target,
                   std::string* config_path) {
  std::string label = target.Label();
  config_path->clear();
  if (target.config_file == "none") return OkStatus();
  if (target.config_file.empty()) {
    std::string path = ExpandHome("~/.ssh/config");
    if (access(path.c_str(), R_OK) != 0) return OkStatus();
    *config_path = path;
  } else {
    *config_path = ExpandHome(target.config_file);
    if (access(config_path->c_str(), R_OK) != 0) {
      return ErrnoToStatus(
          errno, StrCat(ErrorPrefix(label), "config file ", *config_path));
    }
  }
  if (ssh_options_parse_config(session, config_path->c_str()) < 0) {
    return InvalidArgumentError(StrCat(ErrorPrefix(label), "config file ",
                                       *config_path, ": ",
                                       ssh_get_error(session)));
  }
  return OkStatus();
}

// libssh 0.10 runs ProxyJump as ProxyCommand "ssh [-l u] [-p n] [-J ...]
// -W '[%h]:%p' jump". That OpenSSH client would read ~/.ssh/config and may
// prompt; make it read the same configuration and known_hosts as this
// session and never prompt.
Status HardenProxyJump(ssh_session session, const Target& target,
                       const std::string& config_path,
                       const Transport& transport) {
  std::string command = GetOption(session, SSH_OPTIONS_PROXYCOMMAND);
  constexpr std::string_view kForward = " -W '[%h]:%p' ";
  if (!command.starts_with("ssh ") ||
      command.find(kForward) == std::string::npos) {
    return OkStatus();
  }
  long timeout_s = std::max<long>(
      1, static_cast<long>((target.connect_timeout.count() + 999) / 1000));
  std::string options =
      StrCat(" -o BatchMode=yes -o ConnectTimeout=", timeout_s,
             " -o StrictHostKeyChecking=",
             target.accept_new_host_key ? "accept-new" : "yes");
  // libssh expands %-escapes in the command: leave out paths holding '%'.
  auto add_path = [&](std::string_view flag, const std::string& path) {
    if (path.find('%') == std::string::npos) {
      StrAppend(&options, " ", flag, ShellQuote(path));
    }
  };
  add_path("-o UserKnownHostsFile=", transport.known_hosts);
  if (!transport.global_known_hosts) {
    options += " -o GlobalKnownHostsFile=/dev/null";
  }
  if (!target.config_file.empty() && !config_path.empty()) {
    add_path("-F ", config_path);
  }
  command = StrCat("ssh", options, command.substr(3));
  return SetOption(session, SSH_OPTIONS_PROXYCOMMAND, command.c_str(),
                   target.Label(), "ProxyCommand");
}

// TCP keepalive, and a bound on unacknowledged data, so that a peer that
// vanished is noticed.
void SetSocketOptions(ssh_session session, int keepalive_seconds) {
  socket_t fd = ssh_get_fd(session);
  if (fd < 0 || keepalive_seconds <= 0) return;
  // Fails harmlessly on a ProxyCommand's socketpair.
  int on = 1;
  int count = 3;
  unsigned user_timeout_ms = static_cast<unsigned>(keepalive_seconds) * 4000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &keepalive_seconds,
             sizeof(keepalive_seconds));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &keepalive_seconds,
             sizeof(keepalive_seconds));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
             sizeof(user_timeout_ms));
}

}  // namespace

void SessionDeleter::operator()(ssh_session session) const {
  if (session == nullptr) return;
  if (ssh_is_connected(session)) ssh_disconnect(session);
  ssh_free(session);
}

std::string ExpandHome(const std::string& path) {
  if (path == "~") return HomeDirectory();
  if (path.starts_with("~/")) return HomeDirectory() + path.substr(1);
  return path;
}

void SetTimeout(ssh_session session, std::chrono::milliseconds timeout) {
  long ms = std::max<long>(1, static_cast<long>(timeout.count()));
  long seconds = ms / 1000;
  long usec = (ms % 1000) * 1000;
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &seconds);
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT_USEC, &usec);
}

std::string GetOption(ssh_session session, ssh_options_e option) {
  char* value = nullptr;
  if (ssh_options_get(session, option, &value) != SSH_OK || value == nullptr) {
    return "";
  }
  std::string out = value;
  ssh_string_free_char(value);
  return out;
}

StatusOr<Transport> OpenTransport(const Target& target) {
  std::string label = target.Label();
  if (target.host.empty()) {
    return InvalidArgumentError(StrCat(ErrorPrefix(label), "no host given"));
  }
  Transport transport;
  transport.session.reset(ssh_new());
  ssh_session session = transport.session.get();
  if (session == nullptr) {
    return InternalError(StrCat(ErrorPrefix(label), "ssh_new failed"));
  }
  // The host first: the configuration's Host blocks match against it.
  DTF_RETURN_IF_ERROR(
      SetOption(session, SSH_OPTIONS_HOST, target.host.c_str(), label, "host"));
  bool process_config = false;
  DTF_RETURN_IF_ERROR(SetOption(session, SSH_OPTIONS_PROCESS_CONFIG,
                                &process_config, label, "config option"));
  std::string config_path;
  DTF_RETURN_IF_ERROR(ParseConfig(session, target, &config_path));

  // What the Target says explicitly wins over the configuration.
  if (!target.user.empty()) {
    DTF_RETURN_IF_ERROR(SetOption(session, SSH_OPTIONS_USER,
                                  target.user.c_str(), label, "user"));
  }
  if (target.port != 0) {
    if (target.port < 0 || target.port > 65535) {
      return InvalidArgumentError(
          StrCat(ErrorPrefix(label), "bad port ", target.port));
    }
    unsigned port = static_cast<unsigned>(target.port);
    DTF_RETURN_IF_ERROR(
        SetOption(session, SSH_OPTIONS_PORT, &port, label, "port"));
  }
  transport.known_hosts = target.known_hosts.empty()
                              ? ExpandHome("~/.ssh/known_hosts")
                              : ExpandHome(target.known_hosts);
  transport.global_known_hosts = target.known_hosts.empty();
  DTF_RETURN_IF_ERROR(SetOption(session, SSH_OPTIONS_KNOWNHOSTS,
                                transport.known_hosts.c_str(), label,
                                "known_hosts"));
  if (!transport.global_known_hosts) {
    // An explicit known_hosts file is the only one consulted.
    DTF_RETURN_IF_ERROR(SetOption(session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS,
                                  "/dev/null", label, "known_hosts"));
  }
  SetTimeout(session, target.connect_timeout);
  int nodelay = 1;
  DTF_RETURN_IF_ERROR(
      SetOption(session, SSH_OPTIONS_NODELAY, &nodelay, label, "nodelay"));
  DTF_RETURN_IF_ERROR(HardenProxyJump(session, target, config_path, transport));

  if (ssh_connect(session) != SSH_OK) {
    return SshError(session, label, "connect");
  }
  SetSocketOptions(session, target.keepalive_seconds);
  return transport;
}

}  // namespace dtf::launch::ssh
