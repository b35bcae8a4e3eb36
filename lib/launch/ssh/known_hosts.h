// Host keys against known_hosts: what a connected session's server offers,
// whether known_hosts has it, and recording it. Internal to lib/launch/ssh.
#pragma once

#include <libssh/libssh.h>

#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/target.h"
#include "lib/launch/ssh/transport.h"

namespace dtf::launch::ssh {

// Checks the server's key (after the key exchange) against known_hosts with
// Connect's policy: known goes on; unknown is recorded and goes on with
// accept_new_host_key, else FailedPrecondition; changed is always
// FailedPrecondition. Sets *key to the server's key.
Status VerifyHostKey(const Transport& transport, const Target& target,
                     HostKey* key);

}  // namespace dtf::launch::ssh
