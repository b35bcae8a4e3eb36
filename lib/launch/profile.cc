#include "lib/launch/profile.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "lib/base/bounded_read.h"
#include "lib/base/file.h"
#include "lib/base/host_name.h"
#include "lib/base/strings.h"
#include "lib/base/toml_limits.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"

namespace dtf::launch {

// Kept byte for byte equal to profiles/local.toml (tests/launch checks).
const char kDefaultLocalProfile[] =
    R"(# The local profile: every task of a run is a process on this machine.
# `dtf launch` uses this file when the job directory has no
# profiles/local.toml (the same text is built into the binary).
backend = "local"
ps = 1
workers = 2
host = "127.0.0.1"
base_port = 0     # 0: free ports chosen at launch; else base_port + k for task k
threads = 0       # compute threads per task; 0: each task decides
max_restarts = 0

[env]
)";

namespace {

namespace fs = std::filesystem;
using toml_util::Reader;

std::string Where(const Reader& reader, const toml::node& node) {
  const toml::source_position& p = node.source().begin;
  return StrCat(reader.file(), ":", std::max<uint32_t>(p.line, 1), ":",
                std::max<uint32_t>(p.column, 1));
}

bool IsEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

Status CheckHost(const Reader& reader, const toml::node& node,
                 const std::string& host) {
  if (host.empty()) return reader.Error(node, "host", "must not be empty");
  if (!IsValidHost(host, HostRule::kBindAddress)) {
    return reader.Error(node, "host",
                        StrCat("expected a host name or IPv4 address, got ",
                               toml_util::Text(node)));
  }
  return OkStatus();
}

// Reads an integer key in [min, max] into *out.
Status ReadBounded(Reader* reader, Profile* p, const toml::table& table,
                   std::string_view key, int64_t min, int64_t max, int* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return OkStatus();
  p->where[std::string(key)] = Where(*reader, *node);
  DTF_ASSIGN_OR_RETURN(const int64_t value,
                       reader->GetIntAtLeast(*node, key, min));
  if (value > max) {
    return reader->Error(*node, key,
                         StrCat("must be at most ", max, ", got ", value));
  }
  *out = static_cast<int>(value);
  return OkStatus();
}

// An error naming the first key of `table` (in file order) that a profile
// for `backend` does not have, with the closest one as a suggestion.
Status CheckKeys(const Reader& reader, const toml::table& table, bool ssh) {
  const std::initializer_list<std::string_view> kLocal = {
      "backend", "ps",  "workers",      "host",       "base_port",
      "threads", "env", "max_restarts", "device",     "gpus",
      "tls",     "s3",  "min_workers",  "max_workers"};
  const std::initializer_list<std::string_view> kSsh = {
      "backend",     "ps",         "workers",      "hosts",   "hostfile",
      "work_dir",    "with_data",  "base_port",    "threads", "env",
      "ssh",         "device",     "max_restarts", "tls",     "s3",
      "min_workers", "max_workers"};
  const std::initializer_list<std::string_view>& keys = ssh ? kSsh : kLocal;
  const std::initializer_list<std::string_view>& others = ssh ? kLocal : kSsh;
  return reader.CheckKnownKeys(table, "", keys, [&](std::string_view name) {
    return std::find(others.begin(), others.end(), name) != others.end()
               ? StrCat("only for backend = \"", ssh ? "local" : "ssh", "\"")
               : std::string();
  });
}

// A local path from a profile: "~/" is `home_dir`, a relative path is
// relative to the profile's directory.
std::string LocalPath(const std::string& profile_source,
                      const std::string& home_dir, const std::string& value) {
  if (value == "~" || value.starts_with("~/")) {
    return StrCat(home_dir, value.substr(1));
  }
  if (fs::path(value).is_absolute() ||
      profile_source == kBuiltInProfileSource) {
    return value;
  }
  return (fs::path(profile_source).parent_path() / value)
      .lexically_normal()
      .string();
}

// hosts = ["h1", "h2 slots=2"]: each element read as a hostfile line;
// errors point at the element.
Status ReadInlineHosts(const Reader& reader, const toml::node& node,
                       Profile* p) {
  const toml::array* array = node.as_array();
  if (array == nullptr || array->empty()) {
    return reader.Error(node, "hosts",
                        StrCat("expected a non-empty array of strings, got ",
                               toml_util::Describe(node)));
  }
  std::string text;
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    if (s == nullptr || s->get().find('\n') != std::string::npos) {
      return reader.Error(element, "hosts",
                          StrCat("expected a host line such as \"h1 slots=2\""
                                 ", got ",
                                 toml_util::Text(element)));
    }
    StrAppend(&text, s->get(), "\n");
  }
  StatusOr<std::vector<HostEntry>> hosts = ParseHostfile(text, "");
  if (!hosts.ok()) {
    // "<source>:<line>:<col>: what" with an empty source: the line is the
    // element's position.
    const std::string message(Message(hosts.status()));
    const size_t line_end = message.find(':', 1);
    const size_t col_end = message.find(": ", line_end + 1);
    const size_t line =
        line_end == std::string::npos
            ? 1
            : static_cast<size_t>(std::atoi(message.c_str() + 1));
    const std::string what =
        col_end == std::string::npos ? message : message.substr(col_end + 2);
    const toml::node* element =
        line >= 1 && line <= array->size() ? array->get(line - 1) : &node;
    return reader.Error(*element, StrCat("hosts[", line - 1, "]"), what);
  }
  p->hosts = *std::move(hosts);
  return OkStatus();
}

// The [ssh] table.
Status ReadSsh(const Reader& reader, const toml::node& node,
               const ProfileOptions& options, Profile* p) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return reader.Error(
        node, "ssh",
        StrCat("expected a table, got ", toml_util::Describe(node)));
  }
  const std::initializer_list<std::string_view> kKeys = {
      "user",          "port",
      "identity_file", "known_hosts",
      "config",        "connect_timeout",
      "keepalive",     "reconnect_timeout"};
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string_view name = key->str();
    const std::string path = StrCat("ssh.", toml_util::KeyPart(name));
    if (std::find(std::begin(kKeys), std::end(kKeys), name) ==
        std::end(kKeys)) {
      const std::string_view best = toml_util::Closest(name, kKeys);
      return reader.Error(
          key->source(), path,
          best.empty() ? "unknown key"
                       : StrCat("unknown key (did you mean ", best, "?)"));
    }
    // A structured binding is named, not captured: clang before 16 cannot
    // capture one.
    const toml::node& node = *value;
    auto bounded = [&](int64_t min, int64_t max, int* out) -> Status {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntAtLeast(node, path, min));
      if (v > max) {
        return reader.Error(node, path,
                            StrCat("must be at most ", max, ", got ", v));
      }
      *out = static_cast<int>(v);
      return OkStatus();
    };
    Profile::Ssh& ssh = p->ssh;
    if (name == "port") {
      DTF_RETURN_IF_ERROR(bounded(1, 65535, &ssh.port));
    } else if (name == "connect_timeout") {
      DTF_RETURN_IF_ERROR(bounded(1, 600, &ssh.connect_timeout));
    } else if (name == "keepalive") {
      DTF_RETURN_IF_ERROR(bounded(0, 3600, &ssh.keepalive));
    } else if (name == "reconnect_timeout") {
      DTF_RETURN_IF_ERROR(bounded(0, 3600, &ssh.reconnect_timeout));
    } else {
      DTF_ASSIGN_OR_RETURN(std::string s, reader.GetString(*value, path));
      if (s.empty()) return reader.Error(*value, path, "must not be empty");
      if (name == "user") {
        ssh.user = std::move(s);
      } else if (name == "config" && s == "none") {
        ssh.config = std::move(s);
      } else {
        std::string local = LocalPath(p->source, options.home_dir, s);
        if (name == "identity_file") ssh.identity_file = std::move(local);
        if (name == "known_hosts") ssh.known_hosts = std::move(local);
        if (name == "config") ssh.config = std::move(local);
      }
    }
  }
  return OkStatus();
}

// The keys only an SSH profile has.
Status ReadSshProfile(const Reader& reader, const toml::table& table,
                      const ProfileOptions& options, Profile* p) {
  const toml::node* hosts = table.get("hosts");
  const toml::node* hostfile = table.get("hostfile");
  if (hosts != nullptr && hostfile != nullptr) {
    return reader.Error(*hostfile, "hostfile",
                        "give hosts or hostfile, not both");
  }
  if (hosts == nullptr && hostfile == nullptr) {
    return InvalidArgumentError(
        StrCat(p->source,
               ": backend = \"ssh\" needs hosts = [\"h1\", ...] or "
               "hostfile = \"PATH\""));
  }
  if (hosts != nullptr) {
    p->where["hosts"] = Where(reader, *hosts);
    DTF_RETURN_IF_ERROR(ReadInlineHosts(reader, *hosts, p));
  } else {
    p->where["hostfile"] = Where(reader, *hostfile);
    DTF_ASSIGN_OR_RETURN(const std::string path,
                         reader.GetString(*hostfile, "hostfile"));
    p->hostfile = LocalPath(p->source, options.home_dir, path);
    StatusOr<std::vector<HostEntry>> entries = LoadHostfile(p->hostfile);
    if (!entries.ok()) {
      return Status(entries.status().code(),
                    ToAbsl(StrCat(Where(reader, *hostfile),
                                  ": hostfile: ", Message(entries.status()))));
    }
    p->hosts = *std::move(entries);
  }
  if (const toml::node* node = table.get("work_dir")) {
    p->where["work_dir"] = Where(reader, *node);
    DTF_ASSIGN_OR_RETURN(p->work_dir, reader.GetString(*node, "work_dir"));
    if (p->work_dir.empty() || p->work_dir.find('\n') != std::string::npos ||
        p->work_dir.find('\'') != std::string::npos) {
      return reader.Error(*node, "work_dir",
                          "expected a directory path (no newline or quote)");
    }
    while (p->work_dir.size() > 1 && p->work_dir.back() == '/') {
      p->work_dir.pop_back();
    }
  }
  if (const toml::node* node = table.get("with_data")) {
    DTF_ASSIGN_OR_RETURN(p->with_data, reader.GetBool(*node, "with_data"));
  }
  if (const toml::node* node = table.get("ssh")) {
    p->where["ssh"] = Where(reader, *node);
    DTF_RETURN_IF_ERROR(ReadSsh(reader, *node, options, p));
  }
  return OkStatus();
}

}  // namespace

Status ProfileTable::Read(const Reader& reader, const toml_util::Table& table,
                          Profile*) const {
  return CheckKeys(reader, table.table, ReadsHosts());
}

bool ProfileTable::ReadsHosts() const { return false; }

StatusOr<Profile> ParseProfileWith(std::string_view text, std::string source,
                                   std::string name,
                                   const ProfileOptions& options,
                                   ProfileTableFor tables) {
  DTF_ASSIGN_OR_RETURN(const toml::table table,
                       toml_util::ParseText(text, source));
  Reader reader(source);
  Profile p;
  p.name = std::move(name);
  p.source = std::move(source);
  // The backend first: a profile for another backend has keys this one does
  // not know, and the backend is the better message.
  if (const toml::node* node = table.get("backend")) {
    p.where["backend"] = Where(reader, *node);
    // The backends this dtf has, and "k8s" for Kubernetes.
    static_assert(std::size(kAllBackends) == 5);
    DTF_ASSIGN_OR_RETURN(
        const int backend,
        reader.GetChoice(
            *node, "backend",
            {BackendName(kAllBackends[0]), BackendName(kAllBackends[1]),
             BackendName(kAllBackends[2]), BackendName(kAllBackends[3]),
             BackendName(kAllBackends[4]), "k8s"}));
    p.backend = static_cast<size_t>(backend) < std::size(kAllBackends)
                    ? kAllBackends[static_cast<size_t>(backend)]
                    : BackendKind::kKubernetes;
  }
  DTF_RETURN_IF_ERROR(tables(p.backend).Read(reader, {table}, &p));
  DTF_RETURN_IF_ERROR(ReadBounded(&reader, &p, table, "ps", 1, 1000, &p.ps));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "workers", 1, 10000, &p.workers));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "base_port", 0, 65535, &p.base_port));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "threads", 0, 4096, &p.threads));
  DTF_RETURN_IF_ERROR(ReadBounded(&reader, &p, table, "max_restarts", 0, 1000,
                                  &p.max_restarts));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "min_workers", 0, 10000, &p.min_workers));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "max_workers", 0, 10000, &p.max_workers));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "gpus", 0, 1024, &p.gpus));
  if (const toml::node* node = table.get("tls")) {
    p.where["tls"] = Where(reader, *node);
    DTF_ASSIGN_OR_RETURN(p.tls, reader.GetBool(*node, "tls"));
  }
  if (const toml::node* node = table.get("device")) {
    p.where["device"] = Where(reader, *node);
    DTF_ASSIGN_OR_RETURN(const std::string device,
                         reader.GetString(*node, "device"));
    StatusOr<DeviceName> parsed = ParseDeviceName(device);
    if (!parsed.ok()) {
      return reader.Error(*node, "device", Message(parsed.status()));
    }
    p.device = *parsed;
  }
  if (const toml::node* node = table.get("host")) {
    p.where["host"] = Where(reader, *node);
    DTF_ASSIGN_OR_RETURN(p.host, reader.GetString(*node, "host"));
    DTF_RETURN_IF_ERROR(CheckHost(reader, *node, p.host));
  }
  if (const toml::node* node = table.get("env")) {
    p.where["env"] = Where(reader, *node);
    const toml::table* env = node->as_table();
    if (env == nullptr) {
      return reader.Error(*node, "env",
                          StrCat("expected a table of strings, got ",
                                 toml_util::Describe(*node)));
    }
    for (const auto& [key, value] : toml_util::InFileOrder(*env)) {
      const std::string name(key->str());
      const std::string path = StrCat("env.", toml_util::KeyPart(name));
      if (!IsEnvName(name)) {
        return reader.Error(key->source(), path,
                            "not a variable name (letters, digits and _, "
                            "not starting with a digit)");
      }
      DTF_ASSIGN_OR_RETURN(p.env[name], reader.GetString(*value, path));
    }
  }
  DTF_RETURN_IF_ERROR(ReadS3Table(reader, {table}, &p.s3, &p.where));
  if (tables(p.backend).ReadsHosts()) {
    DTF_RETURN_IF_ERROR(ReadSshProfile(reader, table, options, &p));
  }
  return p;
}

std::string KeyWhere(const Profile& profile, const char* key) {
  auto it = profile.where.find(key);
  return it == profile.where.end() ? profile.source : it->second;
}

}  // namespace dtf::launch
