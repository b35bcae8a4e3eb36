#include "lib/runtime/train/allreduce_worker.h"

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
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
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeWorkerContext(job, options));
  DTF_ASSIGN_OR_RETURN(WorkerModel built, BuildWorkerModel(job, ctx));
  AllreduceResume resumed;
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<Update> update,
      MakeAllreduceUpdate(ctx, job, options, hooks, built.layer.get(),
                          built.model.get(), &resumed));
  if (!options.resume) {
    return RunWorkerLoop(job, options, hooks, ctx, built, *update);
  }
  // Every rank's input from what rank 0 sent (allreduce_restore.h).
  const RankInputStart start = InputStartFor(resumed, options.index);
  hooks.Note(StrCat(TaskName{Role::kWorker, options.index}.ToString(),
                    ": resuming at global step ", resumed.global_step,
                    ", epoch ", start.at.epoch + 1, ", record ",
                    start.at.epoch_record, " of its input (", start.whence,
                    ")"));
  return RunWorkerLoop(job, options, hooks, ctx, built, *update,
                       WorkerInputStart{start.at, start.skip_batches});
}

}  // namespace dtf::runtime
