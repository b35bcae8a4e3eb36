#include "lib/launch/k8s/kubectl.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.output = StrCat("pipe: ", std::strerror(errno));
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
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

std::string RunRecordJson(const std::string& run_id,
                          const KubernetesProfile& p) {
  nlohmann::ordered_json j;
  j["run_id"] = run_id;
  j["namespace"] = p.ns;
  j["context"] = p.context;
  j["flavour"] = p.flavour == Flavour::kJob ? "job" : "tfjob";
  return j.dump(2) + "\n";
}

StatusOr<KubernetesProfile> ParseRunRecord(std::string_view json,
                                           std::string_view name,
                                           std::string* run_id) {
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
  return p;
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
