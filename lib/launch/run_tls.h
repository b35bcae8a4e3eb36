// A run's mutual TLS material (docs/protocol.md, "Transport security"): the
// launcher makes a CA for the run and a certificate per task (for the task's
// host as the plan has it) and one for itself, keeps them in
// <run dir>/tls/ (run_layout.h), and gives each host only the CA's
// certificate and its own tasks' certificates and keys. The CA's key never
// leaves the launcher's machine.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/rpc/tls_certs.h"

namespace dtf::launch {

struct RunTls {
  rpc::Pem ca;
  // By name: TaskDirName(role, index) for each task, kTlsLauncherName for
  // the launcher.
  std::map<std::string, rpc::Pem> certs;
};

// One file of a tls/ directory: its name there and its bytes.
struct TlsFile {
  std::string name;
  std::string contents;
};

// <run_dir>/tls.
std::string TlsDirOf(const std::string& run_dir);

// A new CA for `plan.run_id` and a certificate for each task of `plan`
// (subject alternative names: the task's host, see rpc::IssueCert) and for
// the launcher.
StatusOr<RunTls> MakeRunTls(const Plan& plan);

// A new CA for `run_id` and a certificate for each of `tasks` (their
// names: "ps-0", "worker-0", ...) whose subject alternative name is the
// task's name, for runs whose tasks' hosts are unknown when the
// certificates are made and whose launcher calls no task (Kubernetes: the
// servers check names, rpc::TlsMaterial::by_task_name). No launcher
// certificate.
StatusOr<RunTls> MakeTaskNamedTls(std::string_view run_id,
                                  const std::vector<std::string>& tasks);

// Every file of `tls`: ca.pem, ca.key, then <name>.pem and <name>.key for
// each certificate, by name.
std::vector<TlsFile> AllTlsFiles(const RunTls& tls);
// What a host running `tasks` gets: ca.pem, then <task>.pem and <task>.key
// of each of them; never ca.key, nor another host's keys.
std::vector<TlsFile> HostTlsFiles(const RunTls& tls,
                                  const std::vector<const TaskPlan*>& tasks);
// What every task of a run whose tasks share one directory gets: ca.pem,
// then <name>.pem and <name>.key for each certificate, by name; never
// ca.key. With empty Pems, the same names with empty contents.
std::vector<TlsFile> TaskTlsFiles(const RunTls& tls);
// Whether `name` is a private key's file name (".key"): mode 0600.
bool IsTlsKeyFile(const std::string& name);

// Creates `dir` (mode 0700; AlreadyExists when it is there) and writes
// AllTlsFiles(tls) into it: keys with mode 0600, certificates 0644.
Status WriteRunTls(const RunTls& tls, const std::string& dir);

// What the launcher presents to a run's chief (dtf status): read from a
// tls/ directory that WriteRunTls wrote.
struct LauncherTls {
  std::string ca_cert;
  std::string cert;
  std::string key;
};
// NotFound / PermissionDenied naming the file when one cannot be read.
StatusOr<LauncherTls> ReadLauncherTls(const std::string& dir);

}  // namespace dtf::launch
