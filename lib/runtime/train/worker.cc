#include "lib/runtime/train/worker.h"

#include "lib/base/strings.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/worker_loop.h"

namespace dtf::runtime {

StatusOr<TrainResult> RunWorker(const JobFile& job,
                                const WorkerOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  const TrainSpec& train = job.train;
  const TrainHooks hooks = WorkerHooks(options);
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeWorkerContext(job, options));
  // The tables stay on the parameter servers: each step pulls the rows
  // its batch reads.
  DTF_ASSIGN_OR_RETURN(WorkerModel built,
                       BuildWorkerModel(job, ctx, /*sparse_rows=*/false));
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<Update> update,
      MakePsUpdate(ctx, train, options, hooks, built.model.get()));
  return RunWorkerLoop(job, options, hooks, ctx, built, *update);
}

}  // namespace dtf::runtime
