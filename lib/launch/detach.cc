// StartDetached: a local run carried out by a supervisor process of its own.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>

#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {
namespace {

// A pipe or log the supervisor reports on; a failed write has nowhere to go.
void WriteToPipe(int fd, std::string_view text) {
  (void)WriteAllFd(fd, text, "pipe");
}

std::string Timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

// The supervisor: starts the run, reports "ok <id>" or "error <code>
// <message>" on `report_fd`, then carries the run out. Never returns.
[[noreturn]] void Supervise(PlanRequest request, RunOptions options,
                            int report_fd) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (null_fd >= 0) ::dup2(null_fd, fd);
  }
  // SIGTERM, SIGINT and SIGHUP are taken by sigtimedwait below: each stops
  // the run (tasks get the default dispositions back in Spawn).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, s);
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string pending;  // notes made before the log file exists
  int log_fd = -1;
  options.on_output = nullptr;
  options.cancel = nullptr;
  options.detached = true;
  options.on_note = [&](std::string_view note) {
    const std::string line = StrCat(Timestamp(), " ", note, "\n");
    if (log_fd >= 0) {
      WriteToPipe(log_fd, line);
    } else {
      pending += line;
    }
  };
  StatusOr<std::unique_ptr<Run>> run = StartRun(std::move(request), options);
  if (!run.ok()) {
    WriteToPipe(report_fd,
                StrCat("error ", static_cast<int>(run.status().code()), " ",
                       Message(run.status())));
    ::_exit(1);
  }
  const std::string log =
      (std::filesystem::path((*run)->plan().run_dir) / kSupervisorLog).string();
  log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd >= 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    WriteToPipe(log_fd, StrCat(Timestamp(), " supervisor pid ", ::getpid(),
                               " for run ", (*run)->run_id(), "\n", pending));
  }
  WriteToPipe(report_fd, StrCat("ok ", (*run)->run_id()));
  ::close(report_fd);

  const timespec zero{0, 0};
  while (!(*run)->Poll()) {
    const int signal = ::sigtimedwait(&stop_signals, nullptr, &zero);
    if (signal > 0) {
      (*run)->Stop(CancelledError(StrCat("the supervisor got SIG",
                                         ::sigabbrev_np(signal),
                                         "; stopped every task")));
      break;
    }
    std::this_thread::sleep_for(options.poll);
  }
  const RunOutcome outcome = (*run)->outcome();
  options.on_note(StrCat("run ", RunStateName(outcome.state),
                         outcome.status.ok()
                             ? std::string()
                             : StrCat(": ", Message(outcome.status))));
  run->reset();
  ::_exit(0);
}

}  // namespace

StatusOr<std::string> StartDetached(PlanRequest request, RunOptions options) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  const pid_t first = ::fork();
  if (first < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return ErrnoToStatus(e, "fork for the run's supervisor");
  }
  if (first == 0) {
    ::close(report[0]);
    ::setsid();
    const pid_t second = ::fork();
    if (second != 0) ::_exit(second < 0 ? 1 : 0);
    Supervise(std::move(request), std::move(options), report[1]);
  }
  ::close(report[1]);
  int status;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(report[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(report[0]);
  if (text.starts_with("ok ")) return text.substr(3);
  if (text.starts_with("error ")) {
    const size_t space = text.find(' ', 6);
    const int code = std::atoi(text.substr(6, space - 6).c_str());
    return Status(static_cast<StatusCode>(code),
                  ToAbsl(space == std::string::npos
                             ? std::string_view()
                             : std::string_view(text).substr(space + 1)));
  }
  return InternalError("the run's supervisor exited before starting the run");
}

}  // namespace dtf::launch
