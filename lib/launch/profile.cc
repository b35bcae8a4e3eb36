#include "lib/launch/profile.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/file.h"
#include "lib/data/toml_util.h"

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

StatusOr<toml::table> ParseText(std::string_view text,
                                const std::string& source) {
  auto error = [&](std::string_view description,
                   const toml::source_region& where) {
    return InvalidArgumentError(StrCat(source, ":", where.begin.line, ":",
                                       where.begin.column, ": ", description));
  };
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return error(e.description(), e.source());
  }
#else
  toml::parse_result result = toml::parse(text, source);
  if (!result) {
    return error(result.error().description(), result.error().source());
  }
  return std::move(result).table();
#endif
}

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
  for (char c : host) {
    if (c == ':' || c == '/' || c == ' ' || c == '\t' || c == '[' || c == ']' ||
        static_cast<unsigned char>(c) < 0x20) {
      return reader.Error(node, "host",
                          StrCat("expected a host name or IPv4 address, got ",
                                 toml_util::Text(node)));
    }
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
// does not have, with the closest one as a suggestion.
Status CheckKeys(const Reader& reader, const toml::table& table) {
  const std::initializer_list<std::string_view> kKeys = {
      "backend",   "ps",      "workers", "host",
      "base_port", "threads", "env",     "max_restarts"};
  for (const auto& [key, node] : toml_util::InFileOrder(table)) {
    const std::string_view name = key->str();
    if (std::find(kKeys.begin(), kKeys.end(), name) != kKeys.end()) continue;
    const std::string_view best = toml_util::Closest(name, kKeys);
    return reader.Error(key->source(), toml_util::KeyPart(name),
                        best.empty()
                            ? StrCat("unknown key (expected one of ",
                                     toml_util::Join(kKeys), ")")
                            : StrCat("unknown key (did you mean ", best, "?)"));
  }
  return OkStatus();
}

}  // namespace

StatusOr<Profile> ParseProfile(std::string_view text, std::string source,
                               std::string name) {
  DTF_ASSIGN_OR_RETURN(const toml::table table, ParseText(text, source));
  Reader reader(source);
  Profile p;
  p.name = std::move(name);
  p.source = std::move(source);
  // The backend first: a profile for another backend has keys this one does
  // not know, and the backend is the better message.
  if (const toml::node* node = table.get("backend")) {
    p.where["backend"] = Where(reader, *node);
    DTF_ASSIGN_OR_RETURN(
        const int backend,
        reader.GetChoice(*node, "backend", {"local", "ssh", "k8s"}));
    if (backend != 0) {
      return reader.Error(*node, "backend",
                          StrCat("the ", toml_util::Text(*node),
                                 " backend is not built yet; only \"local\" "
                                 "is"));
    }
  }
  DTF_RETURN_IF_ERROR(CheckKeys(reader, table));
  DTF_RETURN_IF_ERROR(ReadBounded(&reader, &p, table, "ps", 1, 1000, &p.ps));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "workers", 1, 10000, &p.workers));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "base_port", 0, 65535, &p.base_port));
  DTF_RETURN_IF_ERROR(
      ReadBounded(&reader, &p, table, "threads", 0, 4096, &p.threads));
  DTF_RETURN_IF_ERROR(ReadBounded(&reader, &p, table, "max_restarts", 0, 1000,
                                  &p.max_restarts));
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
  return p;
}

StatusOr<Profile> LoadProfileFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return ParseProfile(text, path, fs::path(path).stem().string());
}

StatusOr<Profile> ResolveProfile(const std::string& job_dir,
                                 const std::string& arg) {
  if (arg.empty()) return InvalidArgumentError("--profile: empty name");
  const bool is_path = arg.find('/') != std::string::npos ||
                       (arg.size() > 5 && arg.ends_with(".toml"));
  if (is_path) return LoadProfileFile(arg);
  const std::string path =
      (fs::path(job_dir) / "profiles" / (arg + ".toml")).string();
  std::error_code ec;
  if (fs::exists(path, ec)) return LoadProfileFile(path);
  if (arg == "local") {
    return ParseProfile(kDefaultLocalProfile, kBuiltInProfileSource, "local");
  }
  return NotFoundError(
      StrCat("profile \"", arg, "\": no ", path,
             " (give a name under profiles/ or a path to a .toml file)"));
}

}  // namespace dtf::launch
