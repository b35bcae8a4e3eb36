#include "lib/launch/run_tls.h"

#include <sys/stat.h>

#include <cerrno>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch {
namespace {

Status WriteTlsFile(const std::string& path, std::string_view contents,
                    bool private_file) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                       OpenWritableFile(path, private_file));
  DTF_RETURN_IF_ERROR(file->Append(contents));
  DTF_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

}  // namespace

std::string TlsDirOf(const std::string& run_dir) {
  return StrCat(run_dir, "/", kTlsDir);
}

StatusOr<RunTls> MakeRunTls(const Plan& plan) {
  RunTls tls;
  DTF_ASSIGN_OR_RETURN(tls.ca, rpc::MakeRunCa(plan.run_id));
  for (const TaskPlan& t : plan.tasks) {
    const std::string name = TaskDirName(t.role, t.index);
    DTF_ASSIGN_OR_RETURN(tls.certs[name],
                         rpc::IssueCert(tls.ca, name,
                                        std::vector<std::string>{
                                            plan.hooks().TlsNameOf(plan, t)}));
  }
  DTF_ASSIGN_OR_RETURN(tls.certs[kTlsLauncherName],
                       rpc::IssueCert(tls.ca, kTlsLauncherName, {}));
  return tls;
}

StatusOr<RunTls> MakeTaskNamedTls(std::string_view run_id,
                                  const std::vector<std::string>& tasks) {
  RunTls tls;
  DTF_ASSIGN_OR_RETURN(tls.ca, rpc::MakeRunCa(run_id));
  for (const std::string& name : tasks) {
    DTF_ASSIGN_OR_RETURN(tls.certs[name], rpc::IssueCert(tls.ca, name, {name}));
  }
  return tls;
}

std::vector<TlsFile> AllTlsFiles(const RunTls& tls) {
  std::vector<TlsFile> files = TaskTlsFiles(tls);
  files.insert(files.begin() + 1, {kTlsCaKey, tls.ca.key});
  return files;
}

std::vector<TlsFile> HostTlsFiles(const RunTls& tls,
                                  const std::vector<const TaskPlan*>& tasks) {
  std::vector<TlsFile> files = {{kTlsCaCert, tls.ca.cert}};
  for (const TaskPlan* t : tasks) {
    const std::string name = TaskDirName(t->role, t->index);
    auto it = tls.certs.find(name);
    if (it == tls.certs.end()) continue;
    files.push_back({StrCat(name, ".pem"), it->second.cert});
    files.push_back({StrCat(name, ".key"), it->second.key});
  }
  return files;
}

std::vector<TlsFile> TaskTlsFiles(const RunTls& tls) {
  std::vector<TlsFile> files = {{kTlsCaCert, tls.ca.cert}};
  for (const auto& [name, pem] : tls.certs) {
    files.push_back({StrCat(name, ".pem"), pem.cert});
    files.push_back({StrCat(name, ".key"), pem.key});
  }
  return files;
}

bool IsTlsKeyFile(const std::string& name) { return name.ends_with(".key"); }

Status WriteRunTls(const RunTls& tls, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0) return ErrnoToStatus(errno, dir);
  // The umask may have taken bits off; the mode is exactly 0700.
  if (::chmod(dir.c_str(), 0700) != 0) return ErrnoToStatus(errno, dir);
  for (const TlsFile& f : AllTlsFiles(tls)) {
    DTF_RETURN_IF_ERROR(WriteTlsFile(StrCat(dir, "/", f.name), f.contents,
                                     IsTlsKeyFile(f.name)));
  }
  return OkStatus();
}

StatusOr<LauncherTls> ReadLauncherTls(const std::string& dir) {
  LauncherTls out;
  DTF_ASSIGN_OR_RETURN(out.ca_cert,
                       ReadFileToString(StrCat(dir, "/", kTlsCaCert)));
  DTF_ASSIGN_OR_RETURN(
      out.cert, ReadFileToString(StrCat(dir, "/", kTlsLauncherName, ".pem")));
  DTF_ASSIGN_OR_RETURN(
      out.key, ReadFileToString(StrCat(dir, "/", kTlsLauncherName, ".key")));
  return out;
}

}  // namespace dtf::launch
