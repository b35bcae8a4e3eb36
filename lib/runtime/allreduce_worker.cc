#include "lib/runtime/allreduce_worker.h"

#include "lib/base/strings.h"
#include "lib/runtime/device.h"
#include "lib/runtime/update.h"
#include "lib/runtime/worker_loop.h"

namespace dtf::runtime {

StatusOr<TrainResult> RunAllreduceWorker(const JobFile& job,
                                         const WorkerOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  const TrainSpec& train = job.train;
  if (!train.device.cuda) {
    return FailedPreconditionError(StrCat(
        job.path,
        ": mode = \"allreduce\" averages gradients between GPUs "
        "over NCCL, but device is \"",
        DeviceNameString(train.device),
        "\"; set device = \"cuda\" in [train] (or use mode = \"sync\" with "
        "parameter servers)"));
  }
  if (options.resume) {
    return FailedPreconditionError(StrCat(
        job.path,
        ": mode = \"allreduce\" runs cannot be resumed from a checkpoint "
        "(only parameter-server runs can); start a new run"));
  }
  const TrainHooks hooks = WorkerHooks(options);
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeComputeContext(train.device, options.threads));
  DTF_ASSIGN_OR_RETURN(WorkerModel built, BuildWorkerModel(job, ctx));
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<Update> update,
      MakeAllreduceUpdate(ctx, job, options, hooks, built.model.get()));
  return RunWorkerLoop(job, options, hooks, ctx, built, *update);
}

}  // namespace dtf::runtime
