#include "lib/launch/spark/spark_task.h"

#include "lib/base/strings.h"

namespace dtf::launch::spark {
namespace {

std::string Join(const std::vector<std::string>& parts, size_t from,
                 size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (i > from) out += ",";
    out += parts[i];
  }
  return out;
}

}  // namespace

std::vector<std::string> SparkTaskArgv(const SparkTaskSpec& spec) {
  return DirTaskArgv(spec, "spark", {});
}

namespace {

// The checks both commands make, and the task's files.
StatusOr<SparkServeCommand> SparkTaskFiles(const SparkTaskSpec& spec) {
  const size_t count = static_cast<size_t>(spec.ps + spec.workers);
  if (spec.addresses.size() != count) {
    return InvalidArgumentError(
        StrCat("--addresses: ", spec.addresses.size(), " addresses for ",
               spec.ps, " parameter servers and ", spec.workers, " workers"));
  }
  for (const std::string& a : spec.addresses) {
    const size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) {
      return InvalidArgumentError(
          StrCat("--addresses: ", QuoteForMessage(a), " is not host:port"));
    }
  }
  if (spec.task_id < 0 || static_cast<size_t>(spec.task_id) >= count) {
    return InvalidArgumentError(StrCat("--task-id ", spec.task_id,
                                       ": out of range for ", count, " tasks"));
  }
  const bool ps = spec.task_id < spec.ps;
  const std::string& me = spec.addresses[static_cast<size_t>(spec.task_id)];
  return DirTaskFiles(spec,
                      TaskName{ps ? Role::kPs : Role::kWorker,
                               ps ? spec.task_id : spec.task_id - spec.ps},
                      me.substr(0, me.rfind(':')));
}

}  // namespace

StatusOr<SparkServeCommand> MakeSparkBatchCommand(
    const SparkTaskSpec& spec,
    const std::vector<std::vector<std::string>>& commands) {
  if (!spec.batch || spec.ps != 0) {
    return InvalidArgumentError(
        StrCat("run ", spec.run_id, ": a batch run has workers only"));
  }
  DTF_ASSIGN_OR_RETURN(SparkServeCommand c, SparkTaskFiles(spec));
  DTF_ASSIGN_OR_RETURN(c.argv, DirBatchArgv(spec, c.task, commands));
  c.argv[0] = spec.binary;
  return c;
}

StatusOr<SparkServeCommand> MakeSparkServeCommand(const SparkTaskSpec& spec) {
  DTF_ASSIGN_OR_RETURN(SparkServeCommand c, SparkTaskFiles(spec));
  const size_t count = static_cast<size_t>(spec.ps + spec.workers);
  const size_t n_ps = static_cast<size_t>(spec.ps);
  c.argv = DirServeArgv(spec, c, Join(spec.addresses, 0, n_ps),
                        Join(spec.addresses, n_ps, count));
  AppendServeTail(spec, c.task, &c.argv);
  return c;
}

StatusOr<ExitInfo> RunSparkTask(const SparkServeCommand& command,
                                const std::atomic<bool>* cancel) {
  return RunDirTask(command, cancel, /*append=*/false,
                    "the run directory must be on storage the executors "
                    "share with the launcher: spark.run_dir");
}

}  // namespace dtf::launch::spark
