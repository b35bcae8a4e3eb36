#include "lib/launch/ssh/task_exec.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

// The monitor's report to the process that started it; a failed write has
// nowhere to go.
void WriteToPipe(int fd, std::string_view text) {
  (void)WriteAllFd(fd, text, "pipe");
}

std::string PidText(const ProcessId& id) {
  return StrCat(id.pid, " ", id.start_ticks, "\n");
}

// The monitor, in its own session: starts the task, reports on `report_fd`
// ("ok <pid> <ticks>" or "error <code> <message>"), waits, records.
[[noreturn]] void Monitor(const TaskExecOptions& options,
                          std::vector<std::pair<std::string, std::string>> env,
                          int report_fd) {
  ::setsid();
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (null_fd >= 0) ::dup2(null_fd, fd);
  }
  // A stop is for the task's group; the monitor outlives it to record it.
  for (int s : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) ::signal(s, SIG_IGN);
  const std::string dir = options.dir;
  SpawnOptions spawn;
  spawn.argv = options.argv;
  spawn.env = std::move(env);
  spawn.stdout_file = dir + "/" + kStdoutFile;
  spawn.stderr_file = dir + "/" + kStderrFile;
  spawn.append = options.append;
  spawn.die_with_parent = true;
  StatusOr<ProcessId> id = Spawn(spawn);
  if (!id.ok()) {
    WriteToPipe(report_fd,
                StrCat("error ", static_cast<int>(id.status().code()), " ",
                       Message(id.status())));
    ::_exit(1);
  }
  const Status pid_written =
      WriteFileAtomically(dir + "/" + kPidFile, PidText(*id));
  if (!pid_written.ok()) {
    ::kill(-id->pid, SIGKILL);
    WriteToPipe(report_fd,
                StrCat("error ", static_cast<int>(pid_written.code()), " ",
                       Message(pid_written)));
    ::_exit(1);
  }
  WriteToPipe(report_fd, StrCat("ok ", id->pid, " ", id->start_ticks));
  ::close(report_fd);

  int status = 0;
  while (::waitpid(id->pid, &status, 0) < 0 && errno == EINTR) {
  }
  ExitRecord record;
  record.task = options.task;
  record.finished_ms = NowMs();
  std::error_code ec;
  const bool stopped = fs::exists(dir + "/" + kStopMarkerFile, ec);
  if (WIFSIGNALED(status)) {
    record.signal = WTERMSIG(status);
    record.exit_code = 128 + record.signal;
    record.state = stopped ? TaskState::kStopped : TaskState::kFailed;
  } else {
    record.exit_code = WEXITSTATUS(status);
    record.state = *record.exit_code == 0 ? TaskState::kExited
                   : stopped              ? TaskState::kStopped
                                          : TaskState::kFailed;
  }
  (void)WriteExitRecord(dir + "/" + kExitFile, record);
  ::_exit(0);
}

}  // namespace

StatusOr<std::vector<std::pair<std::string, std::string>>> ReadEnvFile(
    const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  std::vector<std::pair<std::string, std::string>> env;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view entry(text.data() + start, end - start);
    const size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string_view::npos) {
      return InvalidArgumentError(
          StrCat(path, ": entry ", env.size() + 1, " is not NAME=VALUE"));
    }
    env.emplace_back(std::string(entry.substr(0, eq)),
                     std::string(entry.substr(eq + 1)));
    start = end + 1;
  }
  return env;
}

std::string EnvFileText(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::string out;
  for (const auto& [name, value] : env) {
    out += name;
    out += '=';
    out += value;
    out += '\0';
  }
  return out;
}

StatusOr<ProcessId> StartMonitoredTask(const TaskExecOptions& options) {
  if (options.argv.empty()) {
    return InvalidArgumentError("task exec: no command after --");
  }
  std::error_code ec;
  if (!fs::is_directory(options.dir, ec)) {
    return NotFoundError(StrCat(options.dir, ": no such directory"));
  }
  std::vector<std::pair<std::string, std::string>> env;
  if (!options.env_file.empty()) {
    DTF_ASSIGN_OR_RETURN(env, ReadEnvFile(options.env_file));
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(report[0]);
    ::close(report[1]);
    return ErrnoToStatus(errno, "fork");
  }
  if (pid == 0) {
    ::close(report[0]);
    // A grandchild, so that the monitor is nobody's child here and never a
    // zombie of the SSH session's shell.
    const pid_t monitor = ::fork();
    if (monitor != 0) ::_exit(monitor < 0 ? 1 : 0);
    Monitor(options, std::move(env), report[1]);
  }
  ::close(report[1]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string reply = ReadAllFd(report[0]);
  ::close(report[0]);
  if (reply.starts_with("ok ")) {
    ProcessId id;
    char* end = nullptr;
    id.pid = static_cast<pid_t>(std::strtol(reply.c_str() + 3, &end, 10));
    id.start_ticks = std::strtoull(end, nullptr, 10);
    return id;
  }
  if (reply.starts_with("error ")) {
    char* end = nullptr;
    const long code = std::strtol(reply.c_str() + 6, &end, 10);
    const std::string message = *end == ' ' ? std::string(end + 1) : reply;
    return Status(static_cast<StatusCode>(code), ToAbsl(message));
  }
  return InternalError(StrCat("task ", options.task,
                              ": the monitor process ended without a word"));
}

StatusOr<bool> SignalTask(const std::string& dir, int signal) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFoundError(StrCat(dir, ": no such directory"));
  }
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(dir + "/" + kStopMarkerFile, StrCat(NowMs(), "\n")));
  const std::string pid_file = dir + "/" + kPidFile;
  if (!fs::exists(pid_file, ec)) return false;
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(pid_file));
  ProcessId id;
  char* end = nullptr;
  id.pid = static_cast<pid_t>(std::strtol(text.c_str(), &end, 10));
  id.start_ticks = std::strtoull(end, nullptr, 10);
  if (id.pid <= 1) return DataLossError(StrCat(pid_file, ": no pid"));
  if (id.start_ticks == 0) {
    return DataLossError(
        StrCat(pid_file, ": pid ", id.pid,
               " has no start time; it cannot be told from another process "
               "that has that pid now, so nothing was signalled"));
  }
  return SignalGroup(id, signal);
}

}  // namespace dtf::launch
