#include "lib/launch/ssh/tunnel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libssh/libssh.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <list>
#include <thread>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

constexpr size_t kBufferLimit = 1 << 20;  // per direction and connection
constexpr size_t kReadSize = 64 * 1024;

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

// One forwarded connection: a local socket and its direct-tcpip channel.
struct Forward {
  int fd = -1;
  ssh_channel channel = nullptr;
  std::string to_channel;  // read from the socket, not yet sent
  std::string to_socket;   // read from the channel, not yet written
  bool socket_eof = false;
  bool channel_eof = false;
  bool eof_sent = false;
  bool shut_down = false;  // SHUT_WR done on the socket
  bool failed = false;

  ~Forward() {
    if (channel != nullptr) {
      if (ssh_channel_is_open(channel)) ssh_channel_close(channel);
      ssh_channel_free(channel);
    }
    if (fd >= 0) close(fd);
  }
  bool Done() const {
    return failed || (eof_sent && shut_down) ||
           (channel_eof && shut_down && socket_eof);
  }
};

}  // namespace

struct Tunnel::Impl {
  Target target;
  std::string remote_host;
  int remote_port = 0;
  std::unique_ptr<Session> session;
  ssh_event event = nullptr;  // processes `session`'s input
  int listen_fd = -1;
  int local_port = 0;
  int wake[2] = {-1, -1};
  std::thread thread;

  ~Impl() {
    if (thread.joinable()) {
      char byte = 0;
      (void)!write(wake[1], &byte, 1);
      thread.join();
    }
    DropSession();
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  // The session, or null when it is gone; watched by `event`.
  ssh_session Raw() {
    if (session == nullptr) return nullptr;
    auto raw = static_cast<ssh_session>(session->raw());
    if (!ssh_is_connected(raw)) return nullptr;
    if (event == nullptr) {
      event = ssh_event_new();
      ssh_event_add_session(event, raw);
    }
    return raw;
  }
  void DropSession() {
    if (event != nullptr) {
      ssh_event_remove_session(event, static_cast<ssh_session>(session->raw()));
      ssh_event_free(event);
      event = nullptr;
    }
    session.reset();
  }
  void Run();
  void Accept(std::list<Forward>* forwards);
  void Pump(Forward* f, short revents);
};

void Tunnel::Impl::Accept(std::list<Forward>* forwards) {
  bool reconnect_failed = false;  // then refuse the rest of this batch
  while (true) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    ssh_session raw = Raw();
    if (raw == nullptr && reconnect_failed) {
      close(fd);
      continue;
    }
    if (raw == nullptr) {
      // The connection died: connect again for this and later forwards.
      forwards->clear();
      DropSession();
      StatusOr<std::unique_ptr<Session>> reconnected = Session::Connect(target);
      if (!reconnected.ok()) {
        reconnect_failed = true;
        close(fd);
        continue;
      }
      session = *std::move(reconnected);
      raw = Raw();
    }
    ssh_channel channel = ssh_channel_new(raw);
    if (channel == nullptr ||
        ssh_channel_open_forward(channel, remote_host.c_str(), remote_port,
                                 "127.0.0.1", local_port) != SSH_OK) {
      if (channel != nullptr) ssh_channel_free(channel);
      close(fd);
      continue;
    }
    Forward& f = forwards->emplace_back();
    f.fd = fd;
    f.channel = channel;
  }
}

void Tunnel::Impl::Pump(Forward* f, short revents) {
  char buffer[kReadSize];
  // Socket -> buffer.
  if ((revents & (POLLIN | POLLHUP | POLLERR)) && !f->socket_eof &&
      f->to_channel.size() < kBufferLimit) {
    ssize_t n = read(f->fd, buffer, sizeof(buffer));
    if (n > 0) {
      f->to_channel.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      f->socket_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      f->failed = true;
      return;
    }
  }
  // Buffer -> channel, as far as the channel's window allows.
  while (!f->to_channel.empty()) {
    uint32_t window = ssh_channel_window_size(f->channel);
    if (window == 0) break;
    uint32_t size = static_cast<uint32_t>(
        std::min<size_t>({f->to_channel.size(), window, kReadSize}));
    int n = ssh_channel_write(f->channel, f->to_channel.data(), size);
    if (n < 0) {
      f->failed = true;
      return;
    }
    f->to_channel.erase(0, static_cast<size_t>(n));
  }
  if (f->socket_eof && f->to_channel.empty() && !f->eof_sent) {
    ssh_channel_send_eof(f->channel);
    f->eof_sent = true;
  }
  // Channel -> buffer.
  while (!f->channel_eof && f->to_socket.size() < kBufferLimit) {
    int n = ssh_channel_read_nonblocking(f->channel, buffer, sizeof(buffer), 0);
    if (n > 0) {
      f->to_socket.append(buffer, static_cast<size_t>(n));
    } else if (n == SSH_EOF || ssh_channel_is_closed(f->channel)) {
      f->channel_eof = true;
    } else if (n == SSH_ERROR) {
      f->failed = true;
      return;
    } else {
      break;
    }
  }
  // Buffer -> socket.
  while (!f->to_socket.empty()) {
    ssize_t n =
        send(f->fd, f->to_socket.data(), f->to_socket.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) f->failed = true;
      break;
    }
    f->to_socket.erase(0, static_cast<size_t>(n));
  }
  if (f->channel_eof && f->to_socket.empty() && !f->shut_down) {
    shutdown(f->fd, SHUT_WR);
    f->shut_down = true;
  }
}

// All libssh calls for the tunnel's session happen on this thread.
void Tunnel::Impl::Run() {
  std::list<Forward> forwards;
  std::vector<struct pollfd> fds;
  while (true) {
    ssh_session raw = Raw();
    if (raw == nullptr) forwards.clear();
    fds.clear();
    fds.push_back({wake[0], POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    int ssh_fd = raw != nullptr ? ssh_get_fd(raw) : -1;
    fds.push_back({ssh_fd, POLLIN, 0});
    for (Forward& f : forwards) {
      short events = 0;
      if (!f.socket_eof && f.to_channel.size() < kBufferLimit) events |= POLLIN;
      if (!f.to_socket.empty()) events |= POLLOUT;
      fds.push_back({f.fd, events, 0});
    }
    int ready = poll(fds.data(), fds.size(), 1000);
    if (ready < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    if (raw != nullptr && fds[2].revents != 0) ssh_event_dopoll(event, 0);
    if (fds[1].revents & POLLIN) Accept(&forwards);
    size_t i = 3;
    for (auto it = forwards.begin(); it != forwards.end(); ++i) {
      short revents = i < fds.size() ? fds[i].revents : 0;
      Pump(&*it, revents);
      it = it->Done() ? forwards.erase(it) : std::next(it);
    }
    // A dead session ends the forwards; the next connection reconnects.
    if (Raw() != nullptr) (void)session->KeepAlive();
  }
  forwards.clear();
}

Tunnel::Tunnel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tunnel::~Tunnel() = default;

int Tunnel::local_port() const { return impl_->local_port; }

std::string Tunnel::local_address() const {
  return StrCat("127.0.0.1:", impl_->local_port);
}

StatusOr<std::unique_ptr<Tunnel>> Tunnel::Open(const Target& target,
                                               const std::string& remote_host,
                                               int remote_port) {
  auto impl = std::make_unique<Impl>();
  impl->target = target;
  impl->remote_host = remote_host;
  impl->remote_port = remote_port;
  DTF_ASSIGN_OR_RETURN(impl->session, Session::Connect(target));
  std::string what = StrCat(ErrorPrefix(target.Label()), "tunnel to ",
                            remote_host, ":", remote_port);
  impl->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) return ErrnoToStatus(errno, what);
  struct sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&address),
           sizeof(address)) != 0 ||
      listen(impl->listen_fd, 128) != 0 ||
      getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&address),
                  &length) != 0) {
    return ErrnoToStatus(errno, what);
  }
  SetNonBlocking(impl->listen_fd);
  impl->local_port = ntohs(address.sin_port);
  if (pipe2(impl->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, what);
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<Tunnel>(new Tunnel(std::move(impl)));
}

}  // namespace dtf::launch::ssh
