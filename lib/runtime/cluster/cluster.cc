#include "lib/runtime/cluster/cluster.h"

#include <cctype>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "lib/base/decimal.h"
#include "lib/base/host_name.h"
#include "lib/base/strings.h"
#include "nlohmann/json.hpp"

namespace dtf::runtime {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

// ------------------------------------------------------------- TF_CONFIG

using Json = nlohmann::json;

Status TfConfigError(std::string_view message) {
  return InvalidArgumentError(StrCat("TF_CONFIG: ", message));
}

// nlohmann's messages start "[json.exception.parse_error.101] ".
std::string_view WithoutJsonPrefix(std::string_view what) {
  if (what.starts_with("[json.exception.")) {
    size_t end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  return what;
}

StatusOr<std::vector<TaskAddress>> JsonAddresses(const Json& list,
                                                 std::string_view job) {
  if (!list.is_array()) {
    return TfConfigError(StrCat(
        "cluster.", job, " must be a list of \"host:port\" strings, got ",
        list.type_name()));
  }
  std::vector<TaskAddress> addresses;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& item = list[i];
    if (!item.is_string()) {
      return TfConfigError(StrCat("cluster.", job, "[", i,
                                  "] must be a \"host:port\" string, got ",
                                  item.type_name()));
    }
    StatusOr<TaskAddress> address =
        ParseTaskAddress(item.get_ref<const std::string&>());
    if (!address.ok()) {
      return TfConfigError(
          StrCat("cluster.", job, "[", i, "]: ", Message(address.status())));
    }
    addresses.push_back(*std::move(address));
  }
  return addresses;
}

StatusOr<ClusterSpec> JsonCluster(const Json& root) {
  auto it = root.find("cluster");
  if (it == root.end()) {
    return TfConfigError(
        "no \"cluster\" (as {\"worker\": [\"host:port\", ...], ...})");
  }
  if (!it->is_object()) {
    return TfConfigError(StrCat(
        "\"cluster\" must be an object of job names to address lists, got ",
        it->type_name()));
  }
  ClusterSpec cluster;
  for (const auto& [job, list] : it->items()) {
    std::optional<Role> role = ParseRoleName(job);
    if (!role) {
      return TfConfigError(
          StrCat("cluster job \"", job, "\" is not one of ", RoleList()));
    }
    DTF_ASSIGN_OR_RETURN(cluster.tasks(*role), JsonAddresses(list, job));
  }
  return cluster;
}

StatusOr<int> JsonTaskIndex(const Json& task) {
  auto it = task.find("index");
  if (it == task.end()) return 0;  // TensorFlow's default
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  int64_t index = 0;
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    if (v > static_cast<uint64_t>(kMax)) {
      return TfConfigError(StrCat("task.index ", v, " is too large"));
    }
    index = static_cast<int64_t>(v);
  } else if (it->is_number_integer()) {
    index = it->get<int64_t>();
    if (index < 0) {
      return TfConfigError(StrCat("task.index ", index, " is negative"));
    }
    if (index > kMax) {
      return TfConfigError(StrCat("task.index ", index, " is too large"));
    }
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (!ParseDecimal(s, kMax, &index)) {
      return TfConfigError(
          StrCat("task.index \"", s, "\" is not a non-negative integer"));
    }
  } else {
    return TfConfigError(
        StrCat("task.index must be an integer, got ",
               it->is_number() ? it->dump() : it->type_name()));
  }
  return static_cast<int>(index);
}

StatusOr<TaskName> JsonTask(const Json& root) {
  auto it = root.find("task");
  if (it == root.end()) {
    return TfConfigError(
        "no \"task\" (as {\"type\": \"worker\", \"index\": 0})");
  }
  if (!it->is_object()) {
    return TfConfigError(
        StrCat("\"task\" must be an object, got ", it->type_name()));
  }
  auto type = it->find("type");
  if (type == it->end()) return TfConfigError("task.type is missing");
  if (!type->is_string()) {
    return TfConfigError(
        StrCat("task.type must be a string, got ", type->type_name()));
  }
  const std::string& name = type->get_ref<const std::string&>();
  std::optional<Role> role = ParseRoleName(name);
  if (!role) {
    return TfConfigError(
        StrCat("task.type \"", name, "\" is not one of ", RoleList()));
  }
  DTF_ASSIGN_OR_RETURN(int index, JsonTaskIndex(*it));
  return TaskName{*role, index};
}

StatusOr<TfConfig> ParseTfConfigJson(std::string_view text) {
  if (Trim(text).empty()) {
    return TfConfigError(
        "empty; expected a JSON object with \"cluster\" and "
        "\"task\"");
  }
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return TfConfigError(
        StrCat("not valid JSON: ", WithoutJsonPrefix(e.what())));
  }
  if (!root.is_object()) {
    return TfConfigError(
        StrCat("expected a JSON object, got ", root.type_name()));
  }
  TfConfig config;
  DTF_ASSIGN_OR_RETURN(config.cluster, JsonCluster(root));
  DTF_ASSIGN_OR_RETURN(config.task, JsonTask(root));
  return config;
}

}  // namespace

std::string TaskAddress::ToString() const {
  if (host.find(':') != std::string::npos) {
    return StrCat("[", host, "]:", port);
  }
  return StrCat(host, ":", port);
}

StatusOr<TaskAddress> ParseTaskAddress(std::string_view text) {
  auto error = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("address \"", text, "\": ", why));
  };
  if (text.empty()) return error("empty; expected host:port");
  std::string_view host;
  std::string_view rest;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return error("no ']' after '['");
    host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (!rest.starts_with(':')) return error("expected ':port' after ']'");
    rest.remove_prefix(1);
    if (!IsIpv6Address(host)) {
      return error(StrCat("\"", host, "\" in brackets is not an IPv6 address"));
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return error("expected host:port");
    }
    host = text.substr(0, colon);
    rest = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return error("an IPv6 host goes in brackets, as \"[::1]:2222\"");
    }
    if (host.empty()) return error("the host is empty");
    if (const size_t bad = FindInvalidHostChar(host, HostRule::kName);
        bad != std::string_view::npos) {
      return error(StrCat("host \"", host, "\" holds '", host[bad],
                          "'; expected a name or an IP address"));
    }
  }
  int64_t port = 0;
  if (!ParseDecimal(rest, 65535, &port) || port == 0) {
    return error(StrCat("port \"", rest, "\" is not a number from 1 to 65535"));
  }
  return TaskAddress{std::string(host), static_cast<int>(port)};
}

const std::vector<TaskAddress>& ClusterSpec::tasks(Role role) const {
  switch (role) {
    case Role::kPs:
      return ps;
    case Role::kWorker:
      return workers;
    case Role::kChief:
      return chief;
    case Role::kEvaluator:
      return evaluators;
  }
  return workers;
}

std::vector<TaskAddress>& ClusterSpec::tasks(Role role) {
  return const_cast<std::vector<TaskAddress>&>(
      static_cast<const ClusterSpec*>(this)->tasks(role));
}

TaskName ClusterSpec::coordinator() const {
  return TaskName{chief.empty() ? Role::kWorker : Role::kChief, 0};
}

const TaskAddress* ClusterSpec::Find(const TaskName& id) const {
  const std::vector<TaskAddress>& list = tasks(id.role);
  if (id.index < 0 || static_cast<size_t>(id.index) >= list.size()) {
    return nullptr;
  }
  return &list[id.index];
}

int ClusterSpec::num_trainers() const {
  return static_cast<int>(workers.size() + chief.size());
}

StatusOr<ClusterSpec> ParseClusterSpecString(std::string_view text) {
  auto error = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("cluster spec \"", text, "\": ", why));
  };
  if (Trim(text).empty()) {
    return InvalidArgumentError(
        "cluster spec is empty; expected jobs as "
        "\"ps|host:port;host:port,worker|host:port\"");
  }
  ClusterSpec cluster;
  bool seen[std::size(kRoles)] = {};
  for (std::string_view job : Split(text, ',')) {
    size_t bar = job.find('|');
    if (bar == std::string_view::npos) {
      return error(StrCat("job \"", Trim(job),
                          "\" has no '|'; expected name|host:port;host:port"));
    }
    std::string_view name = Trim(job.substr(0, bar));
    std::optional<Role> role = ParseRoleName(name);
    if (!role) {
      return error(
          StrCat("job name \"", name, "\" is not one of ", RoleList()));
    }
    bool& was_seen = seen[static_cast<int>(*role)];
    if (was_seen) return error(StrCat("job \"", name, "\" appears twice"));
    was_seen = true;
    std::vector<TaskAddress>& tasks = cluster.tasks(*role);
    for (std::string_view item : Split(job.substr(bar + 1), ';')) {
      item = Trim(item);
      if (item.empty()) {
        return error(StrCat("job \"", name, "\" has an empty address"));
      }
      StatusOr<TaskAddress> address = ParseTaskAddress(item);
      if (!address.ok()) {
        return error(StrCat("job \"", name, "\": ", Message(address.status())));
      }
      tasks.push_back(*std::move(address));
    }
  }
  return cluster;
}

std::string ClusterSpecToString(const ClusterSpec& cluster) {
  std::string out;
  for (Role role : kRoles) {
    const std::vector<TaskAddress>& tasks = cluster.tasks(role);
    if (tasks.empty()) continue;
    if (!out.empty()) out += ',';
    StrAppend(&out, RoleName(role), "|");
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (i > 0) out += ';';
      out += tasks[i].ToString();
    }
  }
  return out;
}

StatusOr<TfConfig> ParseTfConfig(std::string_view json) {
  try {
    return ParseTfConfigJson(json);
  } catch (const nlohmann::json::exception& e) {
    // Every access above checks types first; this is a safety net.
    return TfConfigError(WithoutJsonPrefix(e.what()));
  }
}

std::string TfConfigToJson(const TfConfig& config) {
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  for (Role role : {Role::kChief, Role::kWorker, Role::kPs, Role::kEvaluator}) {
    const std::vector<TaskAddress>& tasks = config.cluster.tasks(role);
    if (tasks.empty()) continue;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const TaskAddress& t : tasks) list.push_back(t.ToString());
    cluster[std::string(RoleName(role))] = std::move(list);
  }
  nlohmann::ordered_json root;
  root["cluster"] = std::move(cluster);
  root["task"]["type"] = std::string(RoleName(config.task.role));
  root["task"]["index"] = config.task.index;
  // Replacing invalid UTF-8 keeps dump() from throwing on odd host bytes.
  return root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::vector<TaskAddress>> ParseAddressList(std::string_view text) {
  std::vector<TaskAddress> addresses;
  if (Trim(text).empty()) return addresses;
  std::vector<std::string_view> items = Split(text, ',');
  for (size_t i = 0; i < items.size(); ++i) {
    std::string_view item = Trim(items[i]);
    if (item.empty()) {
      return InvalidArgumentError(
          StrCat("address list \"", text, "\": item ", i + 1, " is empty"));
    }
    StatusOr<TaskAddress> address = ParseTaskAddress(item);
    if (!address.ok()) {
      return InvalidArgumentError(
          StrCat("address list \"", text, "\": ", Message(address.status())));
    }
    addresses.push_back(*std::move(address));
  }
  return addresses;
}

Status ValidateCluster(const ClusterSpec& cluster, const TaskName& self) {
  if (cluster.workers.empty() && cluster.chief.empty()) {
    return InvalidArgumentError(StrCat("cluster \"",
                                       ClusterSpecToString(cluster),
                                       "\" has no worker or chief task"));
  }
  if (cluster.chief.size() > 1) {
    std::string list;
    for (const TaskAddress& t : cluster.chief) {
      if (!list.empty()) list += ", ";
      list += t.ToString();
    }
    return InvalidArgumentError(StrCat("cluster lists ", cluster.chief.size(),
                                       " chief tasks (", list,
                                       "); at most one is allowed"));
  }
  std::map<std::pair<std::string, int>, TaskName> used;
  for (Role role : kRoles) {
    const std::vector<TaskAddress>& tasks = cluster.tasks(role);
    for (size_t i = 0; i < tasks.size(); ++i) {
      const TaskName id{role, static_cast<int>(i)};
      const TaskAddress& t = tasks[i];
      if (t.host.empty()) {
        return InvalidArgumentError(
            StrCat("task ", id.ToString(), " has an empty host"));
      }
      if (t.port < 1 || t.port > 65535) {
        return InvalidArgumentError(StrCat("task ", id.ToString(), " (",
                                           t.ToString(), "): port ", t.port,
                                           " is not from 1 to 65535"));
      }
      auto [it, inserted] =
          used.emplace(std::make_pair(Lower(t.host), t.port), id);
      if (!inserted) {
        return InvalidArgumentError(
            StrCat("address ", t.ToString(), " is used by both ",
                   it->second.ToString(), " and ", id.ToString()));
      }
    }
  }
  const std::vector<TaskAddress>& own = cluster.tasks(self.role);
  if (self.index < 0) {
    return InvalidArgumentError(
        StrCat("task ", self.ToString(), " has a negative index"));
  }
  if (static_cast<size_t>(self.index) < own.size()) return OkStatus();
  if (self.role == Role::kEvaluator && own.empty() && self.index == 0) {
    return OkStatus();
  }
  const std::string_view name = RoleName(self.role);
  if (own.empty()) {
    return InvalidArgumentError(
        StrCat("task ", self.ToString(),
               " is not in the cluster, which has no ", name, " task",
               self.role == Role::kEvaluator
                   ? " (an evaluator outside the cluster must be evaluator:0)"
                   : ""));
  }
  return InvalidArgumentError(StrCat(
      "task ", self.ToString(), " is not in the cluster, which has ",
      own.size(), " ", name, own.size() == 1 ? " task (" : " tasks (", name,
      ":0", own.size() == 1 ? "" : StrCat(" to ", name, ":", own.size() - 1),
      ")"));
}

}  // namespace dtf::runtime
