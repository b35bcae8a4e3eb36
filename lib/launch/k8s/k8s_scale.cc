#include "lib/launch/k8s/k8s_scale.h"

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"

namespace dtf::launch::k8s {
namespace {

// The Job manifest at `path` (as RenderManifests wrote it) with its
// completions and parallelism `from` set to `to`.
Status RecordJobIndexes(const std::string& path, int from, int to) {
  DTF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  for (const char* key : {"completions", "parallelism"}) {
    const std::string was = StrCat("\n  ", key, ": ", from, "\n");
    const size_t at = text.find(was);
    if (at == std::string::npos) {
      return DataLossError(StrCat(path, ": no spec.", key, " of ", from,
                                  " to record the scale"));
    }
    text.replace(at, was.size(), StrCat("\n  ", key, ": ", to, "\n"));
  }
  return WriteFileAtomically(path, text);
}

}  // namespace

StatusOr<std::string> ScaleKubernetesRun(const std::string& run_dir,
                                         int workers) {
  std::string id;
  RunRecordFacts facts;
  DTF_ASSIGN_OR_RETURN(const KubernetesProfile p,
                       ReadRunRecord(run_dir, &id, &facts));
  if (p.flavour != Flavour::kJob || !facts.ps || !facts.worker_slots ||
      !facts.workers_started) {
    return FailedPreconditionError(StrCat(
        "run ", id,
        " has no worker slots to start: it was launched without max_workers "
        "above workers (an elastic Indexed Job, flavour = \"job\"), so it "
        "runs its workers to the end"));
  }
  const int slots = *facts.worker_slots;
  const int started = *facts.workers_started;
  if (workers > slots) {
    return InvalidArgumentError(
        StrCat("--workers ", workers, ": run ", id, " has ", slots,
               " worker slots (max_workers = ", slots, ")"));
  }
  if (workers < started) {
    return InvalidArgumentError(StrCat(
        "--workers ", workers, ": run ", id, " has started ", started,
        " workers; dtf scale starts reserved slots, it does not stop workers "
        "(dtf stop ends the whole run)"));
  }
  if (workers == started) {
    return StrCat("run ", id, " already has ", started, " workers\n");
  }
  const std::vector<std::string> patch =
      ScaleJobCommand(p, id, *facts.ps + workers);
  const CommandResult patched = RunCommand(patch);
  if (patched.exit_code != 0) {
    return FailedPreconditionError(
        StrCat("kubernetes: ", ShellJoin(patch), " failed:\n", patched.output));
  }
  facts.workers_started = workers;
  DTF_RETURN_IF_ERROR(WriteFileAtomically(StrCat(run_dir, "/", kRunRecordName),
                                          RunRecordJson(id, p, facts)));
  // The recorded Job too, so that dtf launch --resume applies it at the
  // size it was scaled to.
  DTF_RETURN_IF_ERROR(RecordJobIndexes(StrCat(run_dir, "/kubernetes/job.yaml"),
                                       *facts.ps + started,
                                       *facts.ps + workers));
  return StrCat(patched.output, "run ", id, ": the Job runs ", workers, " of ",
                slots,
                " worker slots; the new workers' pods join at their first "
                "step (dtf status ",
                id, " shows them)\n");
}

}  // namespace dtf::launch::k8s
