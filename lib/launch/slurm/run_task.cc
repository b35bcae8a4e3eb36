#include "lib/launch/slurm/run_task.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch::slurm {

StatusOr<ExitInfo> RunSlurmTask(const SlurmServeCommand& command,
                                const std::atomic<bool>* cancel, bool append) {
  std::error_code ec;
  std::filesystem::create_directories(command.dir, ec);
  if (ec) {
    return FailedPreconditionError(
        StrCat(command.slot.name(), ": cannot create ", command.dir, ": ",
               ec.message(), " (slurm.run_dir must be shared by the nodes)"));
  }
  // Best effort: only messages name the node.
  (void)WriteFileAtomically(StrCat(command.dir, "/", kNodeFile),
                            StrCat(command.slot.host, "\n"));
  SpawnOptions options;
  options.argv = command.argv;
  options.env = command.env;
  options.stdout_file = command.stdout_file;
  options.stderr_file = command.stderr_file;
  options.append = append;
  DTF_ASSIGN_OR_RETURN(const ProcessId id, Spawn(options));
  bool stopped = false;
  std::optional<ExitInfo> exit;
  while (!(exit = TryReap(id.pid))) {
    if (!stopped && cancel != nullptr && cancel->load()) {
      stopped = SignalGroup(id, SIGTERM);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ExitRecord record;
  record.task = command.slot.name();
  record.exit_code = exit->code;
  record.signal = exit->signal;
  record.finished_ms = NowMs();
  // Slurm signals every process of the step, the task too: it may be gone
  // before it was passed the signal, and was stopped all the same.
  const bool told = stopped || (cancel != nullptr && cancel->load());
  record.state = exit->code == 0 && exit->signal == 0 ? TaskState::kExited
                 : told                               ? TaskState::kStopped
                                                      : TaskState::kFailed;
  DTF_RETURN_IF_ERROR(
      WriteExitRecord(StrCat(command.dir, "/", kExitFile), record));
  return *exit;
}

}  // namespace dtf::launch::slurm
