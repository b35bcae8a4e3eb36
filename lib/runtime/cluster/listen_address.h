// The address a task's gRPC server listens on: the one its plan gave it
// ("host:port" in --ps/--workers), not every interface, so that a local
// run is reachable from this machine only and an SSH run's task only on
// the address its peers use.
#pragma once

#include <string>

#include "lib/base/status.h"

namespace dtf::runtime {

struct ListenAddress {
  std::string address;  // for grpc::ServerBuilder::AddListeningPort
  // Set when the address is not `planned`'s own, saying why.
  std::string note;
};

// For `planned` ("host:port", "[v6]:port"): an IP address is listened on
// as it is; a name on what it resolves to here, unless it resolves to
// loopback addresses only while other hosts reach it by that name (a
// Debian host's own name is 127.0.1.1 in its /etc/hosts): every interface
// then, saying so. A name that does not resolve here is an error naming
// it.
StatusOr<ListenAddress> ResolveListenAddress(const std::string& planned);

}  // namespace dtf::runtime
