#include "lib/runtime/serve/serve.h"

#include "grpcpp/grpcpp.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "lib/data/job_toml.h"
#include "lib/runtime/serve/serve_ps.h"
#include "lib/runtime/serve/serve_task.h"
#include "lib/runtime/serve/serve_worker.h"

namespace dtf::runtime {

std::string JobFingerprint(const JobFile& job) {
  const TrainSpec& t = job.train;
  const std::string text = StrCat(
      job.model ? ModelDefinitionToToml(job) : "",
      "\nbatch_size=", t.batch_size, " epochs=", t.epochs, " steps=", t.steps,
      " seed=", t.seed, " mode=", TrainModeName(t.mode));
  return fmt::format("{:08x}", crc32c::Value(text));
}

StatusOr<TrainResult> Serve(const JobFile& job, const ServeOptions& options) {
  ServeTask t(job, options);
  t.creds.job = JobFingerprint(job);
  grpc::ServerBuilder builder;
  DTF_RETURN_IF_ERROR(ConfigureTaskServer(&t, &builder));
  if (t.ps_role) DTF_RETURN_IF_ERROR(AddPsService(&t, &builder));
  if (t.chief) AddCoordinator(&t, &builder);
  DTF_RETURN_IF_ERROR(StartTask(&t, &builder));
  return t.ps_role ? ServePs(&t) : ServeWorker(&t);
}

}  // namespace dtf::runtime
