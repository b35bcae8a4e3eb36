#include "lib/runtime/cluster/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>
#include <string_view>

#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

bool IsLoopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(a);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (a->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
           (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
            in6->sin6_addr.s6_addr[12] == 127);
  }
  return false;
}

bool IsIpLiteral(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return true;
  }
  in_addr v4;
  return inet_pton(AF_INET, std::string(host).c_str(), &v4) == 1;
}

}  // namespace

StatusOr<ListenAddress> ResolveListenAddress(const std::string& planned) {
  const size_t colon = planned.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError(
        StrCat("\"", planned, "\": not a host:port address"));
  }
  const std::string host = planned.substr(0, colon);
  const std::string port = planned.substr(colon + 1);
  if (IsIpLiteral(host)) return ListenAddress{planned, ""};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return UnavailableError(StrCat("cannot listen on ", planned, ": its host ",
                                   host, " does not resolve here (",
                                   gai_strerror(rc), ")"));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, freeaddrinfo);
  bool external = false;
  std::string first;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (!IsLoopback(a->ai_addr)) external = true;
    if (first.empty()) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw =
          a->ai_family == AF_INET
              ? static_cast<const void*>(
                    &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
              : static_cast<const void*>(
                    &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)
                         ->sin6_addr);
      if (inet_ntop(a->ai_family, raw, text, sizeof(text)) != nullptr) {
        first = text;
      }
    }
  }
  if (external || host == "localhost" || host.starts_with("localhost.") ||
      host.starts_with("ip6-localhost")) {
    return ListenAddress{planned, ""};
  }
  return ListenAddress{
      StrCat("0.0.0.0:", port),
      StrCat("host ", host, " resolves to ", first,
             " on this machine (its /etc/hosts), which other hosts cannot "
             "reach; listening on every interface (name this host by an "
             "address its peers and it agree on to listen on that alone)")};
}

}  // namespace dtf::runtime
