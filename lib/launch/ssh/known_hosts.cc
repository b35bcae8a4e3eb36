#include "lib/launch/ssh/known_hosts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/ssh/session.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

constexpr char kGlobalKnownHosts[] = "/etc/ssh/ssh_known_hosts";

// A key as messages show it: "ED25519 SHA256:...".
struct KeyView {
  HostKey key;
  std::string display;  // "ED25519", "ECDSA", "RSA", ...
  std::string Text() const { return StrCat(display, " ", key.fingerprint); }
};

std::string DisplayType(ssh_key key) {
  switch (ssh_key_type(key)) {
    case SSH_KEYTYPE_ED25519:
    case SSH_KEYTYPE_ED25519_CERT01:
      return "ED25519";
    case SSH_KEYTYPE_SK_ED25519:
    case SSH_KEYTYPE_SK_ED25519_CERT01:
      return "ED25519-SK";
    case SSH_KEYTYPE_ECDSA_P256:
    case SSH_KEYTYPE_ECDSA_P384:
    case SSH_KEYTYPE_ECDSA_P521:
    case SSH_KEYTYPE_ECDSA_P256_CERT01:
    case SSH_KEYTYPE_ECDSA_P384_CERT01:
    case SSH_KEYTYPE_ECDSA_P521_CERT01:
      return "ECDSA";
    case SSH_KEYTYPE_SK_ECDSA:
    case SSH_KEYTYPE_SK_ECDSA_CERT01:
      return "ECDSA-SK";
    case SSH_KEYTYPE_RSA:
    case SSH_KEYTYPE_RSA_CERT01:
      return "RSA";
    case SSH_KEYTYPE_DSS:
    case SSH_KEYTYPE_DSS_CERT01:
      return "DSA";
    default:
      return "UNKNOWN";
  }
}

// The key's type name and SHA256 fingerprint, as ssh-keygen -l shows it.
StatusOr<KeyView> ViewKey(ssh_key key, std::string_view label) {
  KeyView view;
  view.display = DisplayType(key);
  enum ssh_keytypes_e type = ssh_key_type(key);
  const char* name =
      (type == SSH_KEYTYPE_ECDSA_P256 || type == SSH_KEYTYPE_ECDSA_P384 ||
       type == SSH_KEYTYPE_ECDSA_P521)
          ? ssh_pki_key_ecdsa_name(key)
          : ssh_key_type_to_char(type);
  view.key.type = name != nullptr ? name : "unknown";
  unsigned char* hash = nullptr;
  size_t hash_len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
                             &hash_len) != SSH_OK) {
    return InternalError(
        StrCat(ErrorPrefix(label), "cannot hash the host key"));
  }
  char* fingerprint =
      ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
  ssh_clean_pubkey_hash(&hash);
  if (fingerprint == nullptr) {
    return InternalError(
        StrCat(ErrorPrefix(label), "cannot format the host key fingerprint"));
  }
  view.key.fingerprint = fingerprint;
  ssh_string_free_char(fingerprint);
  return view;
}

// The name known_hosts files the server under: "host", or "[host]:port"
// when the port is not 22.
std::string KnownHostsName(ssh_session session) {
  std::string host = GetOption(session, SSH_OPTIONS_HOST);
  unsigned port = 22;
  ssh_options_get_port(session, &port);
  return port == 22 ? host : StrCat("[", host, "]:", port);
}

// What Examine found.
struct Examined {
  KeyView offered;
  std::string state;     // "ok", "unknown", "changed"
  std::string name;      // as in known_hosts
  std::string known_at;  // "<file>:<line>" of a different key (changed)
  KeyView known;         // that key
};

// Finds the first known_hosts line for `name` (for the CHANGED message).
void FindKnownLine(const std::vector<std::string>& files,
                   const std::string& name, Examined* out) {
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty() || line[0] == '#' || line[0] == '@') continue;
      struct ssh_knownhosts_entry* entry = nullptr;
      if (ssh_known_hosts_parse_line(name.c_str(), line.c_str(), &entry) !=
              SSH_OK ||
          entry == nullptr) {
        ssh_knownhosts_entry_free(entry);
        continue;
      }
      StatusOr<KeyView> view = ViewKey(entry->publickey, "");
      ssh_knownhosts_entry_free(entry);
      if (!view.ok()) continue;
      out->known_at = StrCat(file, ":", number);
      out->known = *std::move(view);
      return;
    }
  }
}

StatusOr<Examined> Examine(const Transport& transport, std::string_view label) {
  ssh_session session = transport.session.get();
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK) {
    return SshError(session, label, "read the host key");
  }
  StatusOr<KeyView> offered = ViewKey(key, label);
  ssh_key_free(key);
  if (!offered.ok()) return offered.status();
  Examined out;
  out.offered = *std::move(offered);
  out.name = KnownHostsName(session);
  switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
      out.state = "ok";
      break;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      out.state = "unknown";
      break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER: {
      out.state = "changed";
      std::vector<std::string> files = {transport.known_hosts};
      if (transport.global_known_hosts) files.push_back(kGlobalKnownHosts);
      FindKnownLine(files, out.name, &out);
      break;
    }
    case SSH_KNOWN_HOSTS_ERROR:
    default:
      return FailedPreconditionError(StrCat(ErrorPrefix(label), "cannot check ",
                                            transport.known_hosts, ": ",
                                            ssh_get_error(session)));
  }
  return out;
}

std::string TrustCommand(const Target& target) {
  return target.trust_command.empty() ? StrCat("dtf hosts trust ", target.host)
                                      : target.trust_command;
}

Status UnknownError(const Examined& e, const Target& target,
                    const std::string& known_hosts) {
  return FailedPreconditionError(
      StrCat(ErrorPrefix(target.Label()), "host key for ", e.name,
             " is not in ", known_hosts, " (", e.offered.Text(),
             "); to trust it: ", TrustCommand(target)));
}

Status ChangedError(const Examined& e, const Target& target) {
  std::string known = e.known_at.empty()
                          ? std::string("known_hosts has another key")
                          : StrCat(e.known_at, " has ", e.known.Text());
  return FailedPreconditionError(
      StrCat(ErrorPrefix(target.Label()), "HOST KEY CHANGED for ", e.name,
             ": the server offers ", e.offered.Text(), ", ", known,
             "; someone may be intercepting the connection. If the host was "
             "reinstalled and the new key is right: ",
             TrustCommand(target), " --replace"));
}

// mkdir -p with mode 0700.
Status MakeParentDirs(const std::string& file) {
  size_t slash = file.rfind('/');
  if (slash == std::string::npos || slash == 0) return OkStatus();
  std::string dir = file.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return OkStatus();
  DTF_RETURN_IF_ERROR(MakeParentDirs(dir));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, dir);
  }
  return OkStatus();
}

// Adds the session's host key to `path` (created 0600), first dropping the
// lines for `name` when `replace`.
Status RecordHostKey(ssh_session session, const std::string& path,
                     const std::string& name, bool replace,
                     std::string_view label) {
  char* exported = nullptr;
  if (ssh_session_export_known_hosts_entry(session, &exported) != SSH_OK) {
    return SshError(session, label, "export the host key");
  }
  std::string entry = exported;
  ssh_string_free_char(exported);
  if (!entry.ends_with('\n')) entry += '\n';
  DTF_RETURN_IF_ERROR(MakeParentDirs(path));

  std::string content;
  {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    content = buffer.str();
  }
  if (!replace) {
    int fd =
        open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoToStatus(errno, path);
    if (!content.empty() && !content.ends_with('\n')) entry = "\n" + entry;
    Status status = WriteAllFd(fd, entry, path);
    if (close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, path);
    return status;
  }
  std::string kept;
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) {
    struct ssh_knownhosts_entry* parsed = nullptr;
    bool match = !line.empty() && line[0] != '#' && line[0] != '@' &&
                 ssh_known_hosts_parse_line(name.c_str(), line.c_str(),
                                            &parsed) == SSH_OK;
    ssh_knownhosts_entry_free(parsed);
    if (!match) StrAppend(&kept, line, "\n");
  }
  kept += entry;
  std::string temp = StrCat(path, ".tmp-", getpid());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoToStatus(errno, temp);
  Status status = WriteAllFd(fd, kept, temp);
  if (close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, temp);
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, path);
  }
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

}  // namespace

Status VerifyHostKey(const Transport& transport, const Target& target,
                     HostKey* key) {
  std::string label = target.Label();
  DTF_ASSIGN_OR_RETURN(Examined e, Examine(transport, label));
  *key = e.offered.key;
  if (e.state == "ok") return OkStatus();
  if (e.state == "changed") return ChangedError(e, target);
  if (!target.accept_new_host_key) {
    return UnknownError(e, target, transport.known_hosts);
  }
  return RecordHostKey(transport.session.get(), transport.known_hosts, e.name,
                       /*replace=*/false, label);
}

StatusOr<HostKeyCheck> CheckHostKey(const Target& target) {
  DTF_ASSIGN_OR_RETURN(Transport transport, OpenTransport(target));
  DTF_ASSIGN_OR_RETURN(Examined e, Examine(transport, target.Label()));
  HostKeyCheck check;
  check.key = e.offered.key;
  check.state = e.state;
  check.known_hosts = transport.known_hosts;
  return check;
}

StatusOr<HostKey> TrustHostKey(const Target& target, bool replace_changed) {
  std::string label = target.Label();
  DTF_ASSIGN_OR_RETURN(Transport transport, OpenTransport(target));
  DTF_ASSIGN_OR_RETURN(Examined e, Examine(transport, label));
  if (e.state == "changed" && !replace_changed) {
    return ChangedError(e, target);
  }
  if (e.state != "ok") {
    DTF_RETURN_IF_ERROR(RecordHostKey(transport.session.get(),
                                      transport.known_hosts, e.name,
                                      e.state == "changed", label));
  }
  return e.offered.key;
}

}  // namespace dtf::launch::ssh
