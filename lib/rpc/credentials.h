// The identity every RPC between the tasks of a run presents
// (docs/protocol.md): the run id, the run's secret and the protocol version,
// sent as gRPC metadata by call.h. This header needs no gRPC, so that the
// options of a task can carry credentials without bringing gRPC into every
// file that starts one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::rpc {

inline constexpr std::string_view kProtocolVersion = "1";
// The gRPC metadata keys (proto/dtf.proto).
inline constexpr char kRunHeader[] = "dtf-run";
inline constexpr char kSecretHeader[] = "dtf-secret";
inline constexpr char kVersionHeader[] = "dtf-version";
inline constexpr char kJobHeader[] = "dtf-job";

// A run's transport security (docs/protocol.md, "Transport security"):
// the PEM text of the run's CA certificate, and of this process's
// certificate (its server and its client certificate alike) and key. All
// empty: plaintext.
struct TlsMaterial {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  // As a client: the name the server's certificate must hold, when not the
  // host of the address dialled (a call through a tunnel); "" otherwise.
  std::string server_name = {};
  // As a client: each server's certificate must name the task it serves as
  // ("ps-0", "worker-0" for the chief: ForTask) rather than the host
  // dialled. For runs whose hosts are unknown when their certificates are
  // made (Slurm places the tasks after submission).
  bool by_task_name = false;
  bool on() const { return !ca_pem.empty(); }
};

// The identity of a run that every call presents.
struct RunCredentials {
  std::string run_id;
  std::string secret;  // hex
  // A fingerprint of the job's model definition and training settings:
  // tasks of one run must agree on it. Empty: not checked (dtf status).
  std::string job;
  // Mutual TLS with the run's CA when on; plaintext otherwise.
  TlsMaterial tls = {};
};

// `creds` for calls to task `task` (its directory name: "ps-0",
// "worker-0"): with tls.by_task_name, tls.server_name becomes `task`;
// otherwise `creds` as they are.
RunCredentials ForTask(const RunCredentials& creds, std::string_view task);
// The chief's name for ForTask: worker 0 serves the Coordinator.
inline constexpr std::string_view kChiefTask = "worker-0";

// Reads `dir`/ca.pem, `dir`/`name`.pem and `dir`/`name`.key (the key
// private to this user, as a secret is: ReadPrivateFile). Errors name the
// file.
StatusOr<TlsMaterial> ReadTlsDir(const std::string& dir,
                                 const std::string& name);

// The longest secret file read (a secret, surrounding space and all).
inline constexpr size_t kMaxSecretFileBytes = 4096;

// Reads the secret from a file as ReadPrivateFile (lib/base/file.h) does:
// InvalidArgument unless it is the file itself (not a symbolic link), a
// regular file owned by the current user that only its owner may read
// (mode 0600 or stricter), at most kMaxSecretFileBytes long, holding 32 to
// 256 hex digits (trailing space ignored). Every secret dtf reads is read
// here.
StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace dtf::rpc
