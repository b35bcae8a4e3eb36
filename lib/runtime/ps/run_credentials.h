// The runtime's names for a run's credentials, which lib/rpc defines
// (lib/rpc/credentials.h). No gRPC.
#pragma once

#include "lib/rpc/credentials.h"

namespace dtf::runtime {

using rpc::kJobHeader;
using rpc::kProtocolVersion;
using rpc::kRunHeader;
using rpc::kSecretHeader;
using rpc::kVersionHeader;
using rpc::ReadSecretFile;
using rpc::RunCredentials;

}  // namespace dtf::runtime
