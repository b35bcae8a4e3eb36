#include "lib/launch/plan.h"

#include <algorithm>
#include <string>

#include "lib/base/strings.h"
#include "lib/rpc/tls_certs.h"

namespace dtf::launch {
namespace {

bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

const TaskPlan* Plan::Find(std::string_view name) const {
  for (const TaskPlan& t : tasks) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

bool Plan::LeavesLoopback() const {
  for (const TaskPlan& t : tasks) {
    if (!rpc::IsLoopbackHost(t.host)) return true;
  }
  return false;
}

std::string TlsOffWarning(const Profile& profile) {
  return StrCat(KeyWhere(profile, "tls"),
                ": tls = false: the run's secret and every tensor cross the "
                "network in plaintext");
}

Status ValidateSet(std::string_view set) {
  const size_t eq = set.find('=');
  const std::string_view key = set.substr(0, eq);
  const auto bad = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("--set ", ShellQuote(set), ": ", why,
                                       " (expected section.key=value)"));
  };
  if (eq == std::string_view::npos) return bad("no '='");
  if (eq + 1 == set.size()) return bad("empty value");
  if (key.find('.') == std::string_view::npos) return bad("no section");
  size_t part = 0;
  for (size_t i = 0; i <= key.size(); ++i) {
    if (i == key.size() || key[i] == '.') {
      if (i == part) return bad("empty key part");
      part = i + 1;
    } else if (!IsKeyChar(key[i])) {
      return bad(StrCat("'", std::string(1, key[i]),
                        "' in the key (letters, digits, _ and - only)"));
    }
  }
  return OkStatus();
}
std::vector<std::string> RestartArgv(const TaskPlan& task) {
  std::vector<std::string> argv = task.argv;
  if (std::find(argv.begin(), argv.end(), "--restore") == argv.end()) {
    argv.push_back("--restore");
  }
  return argv;
}

std::string ExpandWorkDir(std::string_view work_dir, std::string_view host) {
  std::string out;
  for (size_t i = 0; i < work_dir.size();) {
    if (work_dir.substr(i).starts_with("{host}")) {
      out += host;
      i += 6;
    } else {
      out += work_dir[i++];
    }
  }
  return out;
}

}  // namespace dtf::launch
