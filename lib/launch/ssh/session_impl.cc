#include "lib/launch/ssh/session_impl.h"

#include <libssh/server.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

#include "lib/base/strings.h"
#include "lib/launch/ssh/known_hosts.h"
#include "lib/launch/ssh/session.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Never ask for a passphrase: encrypted keys work through ssh-agent only.
int RefusePassphrase(const char*, char*, size_t, int, int, void*) { return -1; }

struct ChannelDeleter {
  void operator()(ssh_channel channel) const {
    if (channel == nullptr) return;
    if (ssh_channel_is_open(channel)) ssh_channel_close(channel);
    ssh_channel_free(channel);
  }
};
using ChannelPtr = std::unique_ptr<ssh_channel_struct, ChannelDeleter>;

// Restores the session's usual timeout when it goes out of scope.
class TimeoutScope {
 public:
  TimeoutScope(ssh_session session, milliseconds normal)
      : session_(session), normal_(normal) {}
  ~TimeoutScope() { SetTimeout(session_, normal_); }
  void Set(milliseconds timeout) { SetTimeout(session_, timeout); }

 private:
  ssh_session session_;
  milliseconds normal_;
};

std::string MethodNames(int methods) {
  std::string out;
  auto add = [&](int bit, std::string_view name) {
    if (methods & bit) StrAppend(&out, out.empty() ? "" : ",", name);
  };
  add(SSH_AUTH_METHOD_PASSWORD, "password");
  add(SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive");
  add(SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic");
  add(SSH_AUTH_METHOD_HOSTBASED, "hostbased");
  return out.empty() ? "none" : out;
}

Status Authenticate(ssh_session session, const Target& target,
                    const std::string& user) {
  std::string label = target.Label();
  std::string prefix = ErrorPrefix(label);
  int rc = ssh_userauth_none(session, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return OkStatus();
  if (rc == SSH_AUTH_ERROR) return SshError(session, label, "authenticate");
  int methods = ssh_userauth_list(session, nullptr);
  if ((methods & SSH_AUTH_METHOD_PUBLICKEY) == 0) {
    return PermissionDeniedError(
        StrCat(prefix, "the server accepts no public keys for ", user,
               " (it offers ", MethodNames(methods), ")"));
  }
  std::string tried;
  if (!target.identity_file.empty()) {
    std::string path = ExpandHome(target.identity_file);
    tried = path;
    if (access(path.c_str(), R_OK) != 0) {
      return ErrnoToStatus(errno, StrCat(prefix, "identity file ", path));
    }
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(path.c_str(), nullptr, RefusePassphrase,
                                    nullptr, &key) != SSH_OK) {
      // Encrypted (or in a format libssh cannot read): ssh-agent may hold it.
      if (ssh_userauth_agent(session, nullptr) == SSH_AUTH_SUCCESS) {
        return OkStatus();
      }
      return PermissionDeniedError(StrCat(
          prefix, "cannot load the private key ", path,
          " (an encrypted key must be added to ssh-agent: dtf never asks "
          "for a passphrase)"));
    }
    rc = ssh_userauth_publickey(session, nullptr, key);
    ssh_key_free(key);
  } else {
    tried =
        "ssh-agent, the configuration's IdentityFile and ~/.ssh/id_ed25519, "
        "id_ecdsa, id_rsa; encrypted keys only through ssh-agent";
    rc = ssh_userauth_publickey_auto(session, nullptr, nullptr);
  }
  switch (rc) {
    case SSH_AUTH_SUCCESS:
      return OkStatus();
    case SSH_AUTH_PARTIAL:
      return PermissionDeniedError(
          StrCat(prefix, "the server wants more than a public key for ", user,
                 " (multi-factor authentication is not supported)"));
    case SSH_AUTH_DENIED:
      return PermissionDeniedError(StrCat(prefix,
                                          "no key was accepted for user ", user,
                                          " (tried ", tried, ")"));
    default:
      return SshError(session, label, "authenticate");
  }
}

std::string Shorten(const std::string& command) {
  constexpr size_t kMax = 80;
  if (command.size() <= kMax) return command;
  // StrCat, not `substr(...) + "..."`, which GCC 12 at -O2 misreads as
  // writing past the string (-Warray-bounds) in some builds.
  return StrCat(std::string_view(command).substr(0, kMax), "...");
}

}  // namespace

std::string Target::Label() const {
  std::string out;
  if (!user.empty()) StrAppend(&out, user, "@");
  out += host;
  if (port != 0) StrAppend(&out, ":", port);
  return out;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Connect(const Target& target) {
  auto impl = std::make_unique<Impl>();
  impl->target = target;
  impl->label = target.Label();
  DTF_ASSIGN_OR_RETURN(impl->transport, OpenTransport(target));
  ssh_session session = impl->session();
  DTF_RETURN_IF_ERROR(VerifyHostKey(impl->transport, target, &impl->host_key));
  ssh_callbacks_init(&impl->callbacks);
  impl->callbacks.auth_function = RefusePassphrase;
  ssh_set_callbacks(session, &impl->callbacks);
  impl->user = GetOption(session, SSH_OPTIONS_USER);
  DTF_RETURN_IF_ERROR(Authenticate(session, target, impl->user));
  impl->Touch();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const Target& Session::target() const { return impl_->target; }
const HostKey& Session::host_key() const { return impl_->host_key; }
const std::string& Session::user() const { return impl_->user; }
void* Session::raw() { return impl_->session(); }

StatusOr<ExecResult> Session::Exec(const std::string& command,
                                   milliseconds timeout,
                                   std::string_view input) {
  ssh_session session = impl_->session();
  const std::string& label = impl_->label;
  const Clock::time_point deadline = Clock::now() + timeout;
  auto left = [&] {
    return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  };
  auto timed_out = [&] {
    return DeadlineExceededError(
        StrCat(ErrorPrefix(label), "command `", Shorten(command),
               "` did not finish within ", timeout.count(), " ms"));
  };
  // Each blocking step is bounded by what is left of `timeout`.
  TimeoutScope timeouts(session, impl_->target.connect_timeout);
  timeouts.Set(left());
  impl_->Touch();

  // A step that failed once the time was up failed for want of time: say
  // so, rather than libssh's words for it.
  auto failed = [&](std::string_view what) {
    if (left().count() <= 0) return timed_out();
    return SshError(session, label, what);
  };
  ChannelPtr channel(ssh_channel_new(session));
  if (channel == nullptr) return failed("open a channel");
  if (ssh_channel_open_session(channel.get()) != SSH_OK) {
    return failed("open a channel");
  }
  if (ssh_channel_request_exec(channel.get(), command.c_str()) != SSH_OK) {
    return failed(StrCat("run `", Shorten(command), "`"));
  }
  while (!input.empty()) {
    timeouts.Set(left());
    int n = ssh_channel_write(
        channel.get(), input.data(),
        static_cast<uint32_t>(std::min<size_t>(input.size(), 1 << 20)));
    if (n == SSH_ERROR) {
      return failed("write the command's input");
    }
    input.remove_prefix(static_cast<size_t>(n));
  }
  if (ssh_channel_send_eof(channel.get()) != SSH_OK) {
    return failed("close the command's input");
  }

  ExecResult result;
  std::string buffer(1 << 16, '\0');
  while (true) {
    milliseconds slice = std::min(left(), milliseconds(200));
    if (slice.count() <= 0) {
      ssh_channel_request_send_signal(channel.get(), "KILL");
      return timed_out();
    }
    if (ssh_channel_poll_timeout(channel.get(), static_cast<int>(slice.count()),
                                 0) == SSH_ERROR) {
      return failed("read the command's output");
    }
    for (int is_stderr : {0, 1}) {
      std::string& out = is_stderr ? result.err : result.out;
      while (true) {
        int n = ssh_channel_read_nonblocking(
            channel.get(), buffer.data(), static_cast<uint32_t>(buffer.size()),
            is_stderr);
        if (n == SSH_ERROR) {
          return failed("read the command's output");
        }
        if (n <= 0) break;
        out.append(buffer.data(), static_cast<size_t>(n));
      }
    }
    if (ssh_channel_is_eof(channel.get()) &&
        ssh_channel_poll(channel.get(), 0) <= 0 &&
        ssh_channel_poll(channel.get(), 1) <= 0) {
      break;
    }
  }
  // The exit status may follow the end of the output.
  milliseconds rest = left();
  if (rest.count() <= 0) return timed_out();
  timeouts.Set(rest);
  result.exit_status = ssh_channel_get_exit_status(channel.get());
  if (result.exit_status < 0) {
    result.exit_status = -1;
    if (!ssh_is_connected(session)) {
      return SshError(session, label, "wait for the command's exit status");
    }
    if (left().count() <= 0) return timed_out();
  }
  impl_->Touch();
  return result;
}

bool Session::Connected() { return ssh_is_connected(impl_->session()) != 0; }

Status Session::KeepAlive() {
  ssh_session session = impl_->session();
  auto lost = [&] {
    return UnavailableError(
        StrCat(ErrorPrefix(impl_->label),
               "connection lost: ", ssh_get_error(session)));
  };
  if (!ssh_is_connected(session)) return lost();
  int every = impl_->target.keepalive_seconds;
  if (every <= 0) return OkStatus();
  if (Clock::now() - impl_->last_activity < std::chrono::seconds(every)) {
    return OkStatus();
  }
  // A global request the server answers; a write to a dead peer fails, and
  // the socket's TCP_USER_TIMEOUT bounds a silent one.
  if (ssh_send_keepalive(session) != SSH_OK || !ssh_is_connected(session)) {
    return lost();
  }
  impl_->Touch();
  return OkStatus();
}

}  // namespace dtf::launch::ssh
