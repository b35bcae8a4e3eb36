// A write BIO (OpenSSL) that appends what the TLS layer writes to a
// std::string its owner keeps, sends and clears (TlsStream's FlushWrites).
// Unlike OpenSSL's memory BIO it does not clear its whole buffer on each
// reset: a bulk stream would pay a memset of every byte it sends. Internal
// to lib/rpc.
#pragma once

#include <string>

namespace dtf::rpc {

// A new BIO* (returned as void*, so that this header needs no OpenSSL)
// appending to `*out`, which must outlive it; pending counts its bytes.
void* NewAppendingBio(std::string* out);

}  // namespace dtf::rpc
