#include "lib/launch/k8s/kubectl.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/k8s/manifests.h"

extern char** environ;

namespace dtf::launch::k8s {
namespace {

std::vector<std::string> Kubectl(const KubernetesProfile& p) {
  std::vector<std::string> argv = {"kubectl"};
  if (!p.context.empty()) argv.push_back(StrCat("--context=", p.context));
  argv.push_back(StrCat("--namespace=", p.ns));
  return argv;
}

std::string Selector(const std::string& run_id) {
  return StrCat("--selector=", kRunIdLabel, "=", run_id);
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

const char kInstead[] =
    "; dtf launch --render DIR writes the manifests without a cluster, "
    "--dry-run prints them";

}  // namespace

std::string RunKinds(Flavour flavour) {
  return flavour == Flavour::kJob ? "jobs.batch,services,configmaps,secrets"
                                  : "tfjobs.kubeflow.org,configmaps,secrets";
}

std::vector<std::string> ApplyCommand(const KubernetesProfile& p,
                                      const std::string& dir) {
  std::vector<std::string> argv = Kubectl(p);
  for (const char* a : {"apply", "--filename"}) argv.push_back(a);
  argv.push_back(dir);
  return argv;
}

std::vector<std::string> StatusCommand(const KubernetesProfile& p,
                                       const std::string& run_id) {
  std::vector<std::string> argv = Kubectl(p);
  argv.push_back("get");
  argv.push_back(StrCat(RunKinds(p.flavour), ",pods"));
  argv.push_back(Selector(run_id));
  argv.push_back("--output=wide");
  return argv;
}

std::vector<std::string> LogsCommand(const KubernetesProfile& p,
                                     const std::string& run_id, bool follow) {
  std::vector<std::string> argv = Kubectl(p);
  for (const char* a : {"logs", "--prefix", "--all-containers",
                        "--max-log-requests=10000", "--tail=-1"}) {
    argv.push_back(a);
  }
  argv.push_back(Selector(run_id));
  if (follow) argv.push_back("--follow");
  return argv;
}

std::vector<std::string> DeleteCommand(const KubernetesProfile& p,
                                       const std::string& run_id) {
  std::vector<std::string> argv = Kubectl(p);
  argv.push_back("delete");
  argv.push_back(RunKinds(p.flavour));
  argv.push_back(Selector(run_id));
  argv.push_back("--ignore-not-found");
  return argv;
}

std::vector<std::string> ScaleJobCommand(const KubernetesProfile& p,
                                         const std::string& run_id,
                                         int indexes) {
  std::vector<std::string> argv = Kubectl(p);
  for (const char* a : {"patch", "job"}) argv.push_back(a);
  argv.push_back(ObjectName(run_id));
  argv.push_back("--type=merge");
  argv.push_back(StrCat("--patch={\"spec\":{\"completions\":", indexes,
                        ",\"parallelism\":", indexes, "}}"));
  return argv;
}

std::vector<std::string> WorkloadCommand(const KubernetesProfile& p,
                                         const std::string& run_id) {
  std::vector<std::string> argv = Kubectl(p);
  argv.push_back("get");
  argv.push_back(p.flavour == Flavour::kJob ? "jobs.batch"
                                            : "tfjobs.kubeflow.org");
  argv.push_back(Selector(run_id));
  argv.push_back("--output=json");
  return argv;
}

std::vector<std::string> PodsCommand(const KubernetesProfile& p,
                                     const std::string& run_id) {
  std::vector<std::string> argv = Kubectl(p);
  for (const char* a : {"get", "pods"}) argv.push_back(a);
  argv.push_back(Selector(run_id));
  argv.push_back("--output=json");
  return argv;
}

std::vector<std::string> PodLogsCommand(const KubernetesProfile& p,
                                        const std::string& pod,
                                        const std::string& container,
                                        int tail) {
  std::vector<std::string> argv = Kubectl(p);
  argv.push_back("logs");
  argv.push_back(pod);
  argv.push_back(StrCat("--container=", container));
  argv.push_back(StrCat("--tail=", tail));
  return argv;
}

std::vector<std::string> ExecCommand(const KubernetesProfile& p,
                                     const std::string& pod,
                                     const std::string& container,
                                     const std::vector<std::string>& command) {
  std::vector<std::string> argv = Kubectl(p);
  argv.push_back("exec");
  argv.push_back(pod);
  argv.push_back(StrCat("--container=", container));
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

StatusOr<std::vector<PodState>> ParsePods(std::string_view json) {
  const nlohmann::json j =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  auto text = [](const nlohmann::json& o, const char* key) -> std::string {
    if (!o.is_object() || !o.contains(key) || !o[key].is_string()) return "";
    return o[key].get<std::string>();
  };
  if (!j.is_object() || !j.contains("items") || !j["items"].is_array()) {
    return DataLossError(
        StrCat("kubectl get pods: not a list of pods: ", json.substr(0, 200)));
  }
  std::vector<PodState> pods;
  for (const nlohmann::json& item : j["items"]) {
    PodState pod;
    const nlohmann::json& meta = item.is_object() && item.contains("metadata")
                                     ? item["metadata"]
                                     : nlohmann::json();
    pod.name = text(meta, "name");
    const std::string index =
        meta.is_object() && meta.contains("annotations")
            ? text(meta["annotations"],
                   "batch.kubernetes.io/job-completion-index")
            : "";
    int value = -1;
    const auto [end, ec] =
        std::from_chars(index.data(), index.data() + index.size(), value);
    if (pod.name.empty() || ec != std::errc() ||
        end != index.data() + index.size() || value < 0) {
      return DataLossError(StrCat(
          "kubectl get pods: pod \"", pod.name,
          "\" has no batch.kubernetes.io/job-completion-index annotation"));
    }
    pod.index = value;
    const nlohmann::json& status =
        item.contains("status") ? item["status"] : nlohmann::json();
    pod.phase = text(status, "phase");
    if (pod.phase.empty()) pod.phase = "Unknown";
    pod.reason = text(status, "reason");
    pod.message = text(status, "message");
    // A pod no node takes says why (Unschedulable: "0/3 nodes are
    // available: 3 Insufficient cpu.").
    if (status.is_object() && status.contains("conditions") &&
        status["conditions"].is_array()) {
      for (const nlohmann::json& c : status["conditions"]) {
        if (text(c, "type") == "PodScheduled" && text(c, "status") == "False") {
          pod.reason = text(c, "reason");
          pod.message = text(c, "message");
        }
      }
    }
    // A container that cannot start says why (ImagePullBackOff, ...).
    if (status.is_object() && status.contains("containerStatuses") &&
        status["containerStatuses"].is_array()) {
      for (const nlohmann::json& cs : status["containerStatuses"]) {
        if (!cs.is_object() || !cs.contains("state")) continue;
        const nlohmann::json& state = cs["state"];
        if (state.is_object() && state.contains("waiting")) {
          const std::string why = text(state["waiting"], "reason");
          if (!why.empty()) {
            pod.reason = why;
            pod.message = text(state["waiting"], "message");
          }
        }
      }
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain =
        !a.empty() && a.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789-_=./:,@+%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

CommandResult RunCommand(const std::vector<std::string>& argv,
                         bool stderr_apart) {
  CommandResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.output = StrCat("pipe: ", std::strerror(errno));
    return result;
  }
  // Apart, stderr goes to an anonymous file read once the program is done
  // (no second pipe to drain while the first is read).
  int errors = -1;
  if (stderr_apart) {
    errors = ::memfd_create("kubectl-stderr", MFD_CLOEXEC);
    if (errors < 0) {
      result.output = StrCat("memfd_create: ", std::strerror(errno));
      ::close(fds[0]);
      ::close(fds[1]);
      return result;
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_apart ? errors : fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int e =
      ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (e != 0) {
    ::close(fds[0]);
    if (errors >= 0) ::close(errors);
    result.output = StrCat(argv[0], ": ", std::strerror(e));
    return result;
  }
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n > 0) {
      result.output.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (errors >= 0) {
    ::lseek(errors, 0, SEEK_SET);
    while (true) {
      const ssize_t n = ::read(errors, buffer, sizeof(buffer));
      if (n > 0) {
        result.errors.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
    ::close(errors);
  }
  return result;
}

int RunAttached(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  const int e =
      ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (e != 0) {
    const std::string message =
        StrCat("dtf: error: ", argv[0], ": ", std::strerror(e), "\n");
    std::fputs(message.c_str(), stderr);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string RunRecordJson(const std::string& run_id, const KubernetesProfile& p,
                          const RunRecordFacts& facts) {
  nlohmann::ordered_json j;
  j["run_id"] = run_id;
  j["namespace"] = p.ns;
  j["context"] = p.context;
  j["flavour"] = p.flavour == Flavour::kJob ? "job" : "tfjob";
  if (facts.training) j["training"] = *facts.training;
  if (facts.output_kept) j["output_kept"] = *facts.output_kept;
  if (facts.ps) j["ps"] = *facts.ps;
  if (facts.worker_slots) j["worker_slots"] = *facts.worker_slots;
  if (facts.workers_started) j["workers_started"] = *facts.workers_started;
  return j.dump(2) + "\n";
}

StatusOr<KubernetesProfile> ParseRunRecord(std::string_view json,
                                           std::string_view name,
                                           std::string* run_id,
                                           RunRecordFacts* facts) {
  const nlohmann::json j =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  auto text = [&](const char* key) -> const nlohmann::json* {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string()) {
      return nullptr;
    }
    return &j[key];
  };
  const nlohmann::json* id = text("run_id");
  const nlohmann::json* ns = text("namespace");
  const nlohmann::json* context = text("context");
  const nlohmann::json* flavour = text("flavour");
  if (id == nullptr || ns == nullptr || context == nullptr ||
      flavour == nullptr || (*flavour != "job" && *flavour != "tfjob")) {
    return DataLossError(
        StrCat(name,
               ": not a Kubernetes run record (run_id, namespace, context, "
               "flavour \"job\" or \"tfjob\")"));
  }
  KubernetesProfile p;
  p.ns = ns->get<std::string>();
  p.context = context->get<std::string>();
  p.flavour = *flavour == "job" ? Flavour::kJob : Flavour::kTfJob;
  *run_id = id->get<std::string>();
  if (facts != nullptr) {
    *facts = {};
    auto flag = [&](const char* key) -> std::optional<bool> {
      if (!j.contains(key) || !j[key].is_boolean()) return std::nullopt;
      return j[key].get<bool>();
    };
    auto count = [&](const char* key) -> std::optional<int> {
      if (!j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
      return j[key].get<int>();
    };
    facts->training = flag("training");
    facts->output_kept = flag("output_kept");
    facts->ps = count("ps");
    facts->worker_slots = count("worker_slots");
    facts->workers_started = count("workers_started");
  }
  return p;
}

StatusOr<KubernetesProfile> ReadRunRecord(const std::string& run_dir,
                                          std::string* run_id,
                                          RunRecordFacts* facts) {
  const std::string record = StrCat(run_dir, "/", kRunRecordName);
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(record));
  return ParseRunRecord(text, record, run_id, facts);
}

Status CheckCluster(const KubernetesProfile& p) {
  std::vector<std::string> context = {"kubectl", "config", "current-context"};
  if (!p.context.empty()) {
    context = {"kubectl", "config", "get-contexts", p.context};
  }
  const CommandResult c = RunCommand(context);
  if (c.exit_code == -1) {
    return FailedPreconditionError(
        StrCat("kubernetes: kubectl cannot be run (", Trimmed(c.output),
               "); install it or put it on PATH", kInstead));
  }
  if (c.exit_code != 0) {
    return FailedPreconditionError(
        StrCat("kubernetes: ",
               p.context.empty()
                   ? std::string("kubectl has no current context")
                   : StrCat("kubectl has no context \"", p.context, "\""),
               " (", ShellJoin(context), ": ", Trimmed(c.output),
               "); point KUBECONFIG at the cluster's configuration or set "
               "kubernetes.context",
               kInstead));
  }
  std::vector<std::string> reach = Kubectl(p);
  for (const char* a : {"version", "--request-timeout=5s"}) reach.push_back(a);
  const CommandResult r = RunCommand(reach);
  if (r.exit_code != 0) {
    const std::string name = p.context.empty() ? Trimmed(c.output) : p.context;
    return FailedPreconditionError(
        StrCat("kubernetes: the cluster of kubectl context \"", name,
               "\" cannot be reached (", ShellJoin(reach), ": ",
               Trimmed(r.output), ")", kInstead));
  }
  return OkStatus();
}

}  // namespace dtf::launch::k8s
