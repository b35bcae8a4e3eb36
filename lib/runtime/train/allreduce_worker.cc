#include "lib/runtime/train/allreduce_worker.h"

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/train/allreduce_layout.h"
#include "lib/runtime/train/allreduce_restore.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/worker_loop.h"

namespace dtf::runtime {

StatusOr<TrainResult> RunAllreduceWorker(const JobFile& job,
                                         const WorkerOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  const TrainHooks hooks = WorkerHooks(options);
  const std::string self = TaskName{Role::kWorker, options.index}.ToString();
  const int slots = std::max(1, int(options.workers.size()));
  DTF_ASSIGN_OR_RETURN(const AllreduceLayout layout,
                       LayoutAllreduce(options.index, slots, options.members));
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeWorkerContext(job, options));
  DTF_ASSIGN_OR_RETURN(WorkerModel built, BuildWorkerModel(job, ctx));
  AllreduceResume resumed;
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<Update> update,
      MakeAllreduceUpdate(ctx, job, options, layout, hooks, built.layer.get(),
                          built.model.get(), &resumed));
  if (layout.shards.size() > 1) {
    std::string dealt;
    for (size_t i = 1; i < layout.shards.size(); ++i) {
      StrAppend(&dealt, i > 1 ? ", " : "", layout.shards[i]);
    }
    hooks.Note(StrCat(self, ": ", layout.size, " of ", slots,
                      " workers take part; it reads the input shard",
                      layout.shards.size() > 2 ? "s" : "", " of worker ", dealt,
                      " too"));
    // On a GPU the positions ride on no vote: a dealt shard is resumed by
    // its batches' count, which holds only for a shard its own worker
    // read alone.
    if (!update->commits_positions()) {
      hooks.Note(StrCat(self,
                        ": warning: the positions of input shards read by "
                        "another worker are not committed on this device "
                        "(only the CPU's vote carries them): a later "
                        "restart may read some of their batches again or "
                        "skip them"));
    }
  }
  // Every shard's input from what rank 0 sent (allreduce_restore.h), or
  // from the start.
  WorkerInputStart start;
  const RankInputStart own = InputStartFor(resumed, options.index);
  start.at = own.at;
  start.skip_batches = own.skip_batches;
  if (options.resume) {
    hooks.Note(StrCat(self, ": resuming at global step ", resumed.global_step,
                      ", epoch ", own.at.epoch + 1, ", record ",
                      own.at.epoch_record, " of its input (", own.whence, ")"));
  }
  for (size_t i = 1; i < layout.shards.size(); ++i) {
    const int shard = layout.shards[i];
    const RankInputStart other = InputStartFor(resumed, shard);
    start.others.push_back({shard, other.at, other.skip_batches});
    if (options.resume) {
      hooks.Note(StrCat(self, ": reading worker ", shard,
                        "'s input shard from epoch ", other.at.epoch + 1,
                        ", record ", other.at.epoch_record, " (", other.whence,
                        ")"));
    }
  }
  if (!options.resume && start.others.empty()) {
    return RunWorkerLoop(job, options, hooks, ctx, built, *update);
  }
  return RunWorkerLoop(job, options, hooks, ctx, built, *update, start);
}

}  // namespace dtf::runtime
