#include "lib/launch/ssh/preflight.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

#include "lib/base/strings.h"
#include "lib/launch/pack/manifest.h"

namespace dtf::launch {
namespace {

std::string Bytes(uint64_t b) {
  const double gib = static_cast<double>(b) / (1024.0 * 1024 * 1024);
  if (gib >= 1) return StrCat(static_cast<int64_t>(gib * 10) / 10.0, " GiB");
  return StrCat(b / (1024 * 1024), " MiB");
}

// The connection failed: which column and what to do.
void ConnectFailed(const Status& status, const ssh::Target& target,
                   HostRow* row) {
  const std::string message(Message(status));
  row->problem = message;
  switch (status.code()) {
    case StatusCode::kDeadlineExceeded:
      row->ssh = "timeout";
      row->fix = StrCat("nothing answered within ",
                        target.connect_timeout.count() / 1000,
                        " s: check that the host is up and that a firewall "
                        "lets port ",
                        target.port == 0 ? 22 : target.port, " through");
      break;
    case StatusCode::kFailedPrecondition:
      // The message names the command that trusts the key.
      if (message.find("CHANGED") != std::string::npos) {
        row->ssh = "key changed";
      } else {
        row->ssh = "unknown key";
        row->fix =
            "check the fingerprint first; --accept-new-host-keys records "
            "keys on first contact";
      }
      break;
    case StatusCode::kPermissionDenied:
      row->ssh = "auth failed";
      row->fix =
          "check [ssh] user and identity_file in the profile, or add the key "
          "to ssh-agent (ssh-add)";
      break;
    default:
      row->ssh = "unreachable";
      row->fix = StrCat("check the host name and that sshd listens on port ",
                        target.port == 0 ? 22 : target.port);
  }
}

void Check(const Plan& plan, const PreflightOptions& options,
           const HostEntry& entry, HostRow* row,
           std::unique_ptr<RemoteHost>* out) {
  const ssh::Target target = [&] {
    ssh::Target t =
        TargetFor(plan, entry.host, entry.user.value_or(plan.ssh.user),
                  entry.port.value_or(plan.ssh.port));
    t.accept_new_host_key = options.accept_new_host_keys;
    return t;
  }();
  row->host = entry.host;
  row->label = target.Label();
  StatusOr<std::unique_ptr<ssh::Session>> session =
      ssh::Session::Connect(target);
  if (!session.ok()) {
    ConnectFailed(session.status(), target, row);
    return;
  }
  row->ssh = "ok";
  auto host = std::make_unique<RemoteHost>(
      *std::move(session), ExpandWorkDir(plan.work_dir, entry.host));
  StatusOr<HostFacts> facts = host->Probe(options.probe_timeout);
  if (!facts.ok()) {
    row->ssh = "probe failed";
    row->problem = std::string(Message(facts.status()));
    row->fix = "the host must run a POSIX sh with uname, df and awk";
    return;
  }
  // Every file goes to the host over SFTP; a server without the subsystem
  // would fail only at shipping.
  if (StatusOr<bool> sftp = host->session().Exists("."); !sftp.ok()) {
    const std::string message(Message(sftp.status()));
    row->ssh = "no SFTP";
    row->problem = message.find("subsystem") != std::string::npos
                       ? std::string("sshd has no SFTP subsystem")
                       : StrCat("SFTP does not start: ", message);
    row->fix =
        "add `Subsystem sftp internal-sftp` to its sshd_config (dtf ships "
        "files over SFTP)";
    return;
  }
  row->facts = *facts;
  const HostFacts& f = *facts;
  std::vector<std::pair<std::string, std::string>> problems;
  row->arch = f.arch;
  if (!options.arch.empty() && f.arch != options.arch) {
    problems.emplace_back(
        StrCat("architecture ", f.arch, ", the runtime is ", options.arch),
        "run the hosts' architecture, or leave this host out");
  }
  row->glibc = f.glibc.empty() ? "none" : f.glibc;
  if (!options.glibc.empty() &&
      (f.glibc.empty() || pack::CompareVersions(f.glibc, options.glibc) < 0)) {
    problems.emplace_back(
        StrCat("glibc ", row->glibc, ", the runtime needs ", options.glibc),
        "build dtf on a system with an older glibc, or upgrade the host");
  }
  if (!f.writable) {
    row->disk = "not writable";
    problems.emplace_back(
        StrCat("work directory ",
               f.work_dir.empty() ? host->work_dir() : f.work_dir,
               " cannot be created or written"),
        "set work_dir in the profile to a directory the user may write");
  } else {
    row->disk = StrCat(Bytes(f.free_bytes), " free");
    if (f.free_bytes < options.need_bytes) {
      problems.emplace_back(
          StrCat("work directory ", f.work_dir, " has ", Bytes(f.free_bytes),
                 " free, the run needs ", Bytes(options.need_bytes)),
          "free space there, or set work_dir to a larger file system");
    }
  }
  std::vector<int> taken;
  for (const TaskPlan& t : plan.tasks) {
    if (t.host != entry.host || t.port == 0) continue;
    if (std::binary_search(f.listening.begin(), f.listening.end(), t.port)) {
      taken.push_back(t.port);
      problems.emplace_back(
          StrCat("port ", t.port, " (", t.name(), ") is in use"),
          "stop what listens there, or change base_port (0 chooses free "
          "ports)");
    }
  }
  if (plan.base_port == 0) {
    row->ports = "chosen at launch";
  } else {
    row->ports = taken.empty() ? "free" : StrCat(taken.size(), " in use");
  }
  row->gpus = std::to_string(f.gpus.size());
  if (entry.gpus > static_cast<int>(f.gpus.size())) {
    problems.emplace_back(
        StrCat("the hostfile gives it gpus=", entry.gpus, ", it shows ",
               f.gpus.size()),
        "check the NVIDIA driver (nvidia-smi), or lower gpus=");
  }
  const int64_t skew = std::llabs(f.clock_skew_ms);
  row->clock = StrCat(f.clock_skew_ms >= 0 ? "+" : "-", skew, " ms");
  if (skew - f.clock_error_ms > options.max_clock_skew.count()) {
    problems.emplace_back(
        StrCat("clock ", row->clock, " off this machine's"),
        "synchronise the clocks (chrony or systemd-timesyncd)");
  }
  if (!problems.empty()) {
    row->problem = problems.front().first;
    row->fix = problems.front().second;
    for (size_t i = 1; i < problems.size(); ++i) {
      StrAppend(&row->problem, "; ", problems[i].first);
    }
    return;
  }
  row->ok = true;
  *out = std::move(host);
}

}  // namespace

bool PreflightResult::ok() const {
  return std::all_of(rows.begin(), rows.end(),
                     [](const HostRow& r) { return r.ok; });
}

Status PreflightResult::ToStatus() const {
  std::string text;
  size_t failed = 0;
  for (const HostRow& r : rows) {
    if (r.ok) continue;
    ++failed;
    StrAppend(&text, "\n  ", r.host, ": ", r.problem,
              r.fix.empty() ? "" : StrCat("; ", r.fix));
  }
  if (failed == 0) return OkStatus();
  return FailedPreconditionError(StrCat("preflight: ", failed, " of ",
                                        rows.size(), " hosts failed:", text));
}

PreflightResult Preflight(const Plan& plan, const PreflightOptions& options) {
  PreflightResult result;
  result.rows.resize(plan.hosts.size());
  result.hosts.resize(plan.hosts.size());
  result.probe_timeout = options.probe_timeout;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      Check(plan, options, plan.hosts[i], &result.rows[i], &result.hosts[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  return result;
}

std::vector<int> ChoosePorts(const Plan& plan, const PreflightResult& result,
                             int first) {
  // Ports are distinct across the whole run, not only per host: two host
  // names may be one machine (tasks bind every address).
  std::set<int> taken;
  for (const HostRow& row : result.rows) {
    taken.insert(row.facts.listening.begin(), row.facts.listening.end());
  }
  std::vector<int> ports;
  int port = first;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    while (taken.count(port) != 0) ++port;
    ports.push_back(port++);
  }
  return ports;
}

std::string PreflightTable(const PreflightResult& result) {
  std::vector<const HostRow*> order;
  for (const HostRow& r : result.rows) {
    if (!r.ok) order.push_back(&r);
  }
  for (const HostRow& r : result.rows) {
    if (r.ok) order.push_back(&r);
  }
  const std::vector<std::string> heads = {"HOST", "SSH",   "ARCH", "GLIBC",
                                          "DISK", "PORTS", "GPUS", "CLOCK",
                                          "DATA", "STATUS"};
  std::vector<std::vector<std::string>> cells;
  for (const HostRow* r : order) {
    cells.push_back(
        {r->label, r->ssh, r->arch.empty() ? "-" : r->arch,
         r->glibc.empty() ? "-" : r->glibc, r->disk.empty() ? "-" : r->disk,
         r->ports.empty() ? "-" : r->ports, r->gpus.empty() ? "-" : r->gpus,
         r->clock.empty() ? "-" : r->clock, r->data.empty() ? "-" : r->data,
         r->ok ? "ok" : "FAILED"});
  }
  std::vector<size_t> width(heads.size());
  for (size_t c = 0; c < heads.size(); ++c) {
    width[c] = heads[c].size();
    for (const auto& row : cells) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < row.size(); ++c) {
      StrAppend(&out, c == 0 ? "" : "  ",
                c + 1 == row.size() ? row[c] : PadRight(row[c], width[c]));
    }
    return out + "\n";
  };
  std::string out = line(heads);
  for (size_t i = 0; i < order.size(); ++i) {
    out += line(cells[i]);
    if (!order[i]->ok) {
      StrAppend(&out, "  problem: ", order[i]->problem, "\n");
      if (!order[i]->fix.empty())
        StrAppend(&out, "  fix:     ", order[i]->fix, "\n");
    }
  }
  return out;
}

}  // namespace dtf::launch
