// The runtime's names for the calls every task makes and serves, which
// lib/rpc defines (lib/rpc/call.h).
#pragma once

#include "lib/rpc/call.h"
#include "lib/runtime/ps/run_credentials.h"

namespace dtf::runtime {

using rpc::CheckCall;
using rpc::FromGrpc;
using rpc::MakeChannel;
using rpc::MakeClientContext;
using rpc::ToGrpc;

}  // namespace dtf::runtime
