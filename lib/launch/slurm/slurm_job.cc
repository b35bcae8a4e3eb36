#include "lib/launch/slurm/slurm_job.h"

#include <thread>

#include "lib/base/strings.h"
#include "lib/launch/slurm/slurm_cli.h"
#include "lib/launch/slurm/slurm_query.h"

namespace dtf::launch::slurm {
namespace {

bool UnknownJob(const CommandResult& r) {
  return r.err.find("Invalid job id") != std::string::npos ||
         r.err.find("invalid job id") != std::string::npos;
}

SlurmJobState Ended(std::string state) {
  SlurmJobState s;
  s.state = std::move(state);
  s.over = s.state == "ENDED" || SlurmStateFinal(s.state);
  return s;
}

StatusOr<SlurmJobState> QueryStep(const std::string& step) {
  const std::string job = step.substr(0, step.find('.'));
  DTF_ASSIGN_OR_RETURN(
      const CommandResult r,
      RunSlurmCommand({"squeue", "-h", "-s", "-j", job, "-o", "%i"}));
  if (!r.ok() && !UnknownJob(r)) {
    return UnavailableError(
        StrCat("Slurm job step ", step, ": ", r.Describe("squeue")));
  }
  for (size_t at = 0; at < r.out.size();) {
    size_t nl = r.out.find('\n', at);
    if (nl == std::string::npos) nl = r.out.size();
    std::string line = r.out.substr(at, nl - at);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line == step) return Ended("RUNNING");
    at = nl + 1;
  }
  return Ended("ENDED");
}

}  // namespace

StatusOr<SlurmJobState> QuerySlurmJob(const std::string& job) {
  if (job.find('.') != std::string::npos) return QueryStep(job);
  DTF_ASSIGN_OR_RETURN(
      const CommandResult q,
      RunSlurmCommand({"squeue", "-h", "-j", job, "-o", "%T"}));
  if (q.ok()) {
    DTF_ASSIGN_OR_RETURN(const std::optional<std::string> state,
                         ParseSqueueState(q.out));
    if (state) return Ended(*state);
  } else if (!UnknownJob(q)) {
    return UnavailableError(
        StrCat("Slurm job ", job, ": ", q.Describe("squeue")));
  }
  StatusOr<CommandResult> c = RunSlurmCommand({"scontrol", "show", "job", job});
  if (c.ok() && c->ok()) {
    if (std::optional<std::string> state = ParseScontrolJobState(c->out)) {
      return Ended(*state);
    }
  }
  // sacct asks slurmdbd; without one, -c reads the job completion file.
  for (const bool completion : {false, true}) {
    std::vector<std::string> argv = {"sacct", "-n", "-P", "-X",
                                     "-j",    job,  "-o", "JobID,State"};
    if (completion) argv.push_back("-c");
    StatusOr<CommandResult> a = RunSlurmCommand(argv);
    if (a.ok() && a->ok()) {
      if (std::optional<std::string> state = ParseSacctJobState(a->out, job)) {
        return Ended(*state);
      }
    }
  }
  return Ended("ENDED");
}

Status CancelSlurmJob(const std::string& job, const std::string& signal) {
  std::vector<std::string> argv = {"scancel"};
  if (!signal.empty()) argv.push_back(StrCat("--signal=", signal));
  argv.push_back(job);
  DTF_ASSIGN_OR_RETURN(const CommandResult r, RunSlurmCommand(argv));
  if (r.ok() || UnknownJob(r)) return OkStatus();
  // A job that just ended is no error.
  StatusOr<SlurmJobState> now = QuerySlurmJob(job);
  if (now.ok() && now->over) return OkStatus();
  return UnavailableError(
      StrCat("cancelling Slurm job ", job, ": ", r.Describe("scancel")));
}

StatusOr<SlurmJobState> WaitSlurmJobOver(const std::string& job,
                                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    DTF_ASSIGN_OR_RETURN(SlurmJobState s, QuerySlurmJob(job));
    if (s.over || std::chrono::steady_clock::now() >= deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace dtf::launch::slurm
