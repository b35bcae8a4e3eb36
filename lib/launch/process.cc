#include "lib/launch/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"

extern char** environ;

namespace dtf::launch {
namespace {

using Clock = std::chrono::steady_clock;

// The fields of /proc/<pid>/stat after "(comm)": [0] state, [2] pgrp,
// [19] starttime.
struct ProcStat {
  char state = '?';
  pid_t pgrp = 0;
  uint64_t start_ticks = 0;
};

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  const std::string path = StrCat("/proc/", pid, "/stat");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof(buffer) - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string_view text(buffer, static_cast<size_t>(n));
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size()) {
    return std::nullopt;
  }
  std::vector<std::string_view> fields;
  size_t start = close + 2;
  while (start < text.size() && fields.size() < 20) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    fields.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (fields.size() < 20 || fields[0].empty()) return std::nullopt;
  ProcStat stat;
  stat.state = fields[0][0];
  stat.pgrp = static_cast<pid_t>(
      std::strtol(std::string(fields[2]).c_str(), nullptr, 10));
  stat.start_ticks =
      std::strtoull(std::string(fields[19]).c_str(), nullptr, 10);
  return stat;
}

bool Dead(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

const char* SignalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? abbrev : "?";
}

// Opens `path` for a child's output: created, truncated unless `keep`,
// appended to.
StatusOr<int> OpenOutput(const std::string& path, bool keep) {
  const int fd = ::open(
      path.c_str(),
      O_WRONLY | O_CREAT | (keep ? 0 : O_TRUNC) | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, path);
  return fd;
}

// Closes the descriptors it holds when it goes away.
struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

}  // namespace

StatusOr<ProcessId> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgumentError("spawn: empty argv");
  const std::string& program = options.argv[0];
  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are made.
  std::vector<char*> argv;
  for (const std::string& a : options.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [key, value] : options.env) {
      if (key == name) overridden = true;
    }
    if (!overridden) env_strings.emplace_back(entry);
  }
  for (const auto& [key, value] : options.env) {
    env_strings.push_back(StrCat(key, "=", value));
  }
  std::vector<char*> envp;
  for (const std::string& e : env_strings) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);

  Fds fds;
  DTF_ASSIGN_OR_RETURN(const int out,
                       OpenOutput(options.stdout_file, options.append));
  fds.fds.push_back(out);
  DTF_ASSIGN_OR_RETURN(const int err,
                       OpenOutput(options.stderr_file, options.append));
  fds.fds.push_back(err);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return ErrnoToStatus(errno, "/dev/null");
  fds.fds.push_back(null_fd);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  fds.fds.push_back(report[0]);
  fds.fds.push_back(report[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoToStatus(errno, StrCat("fork for ", program));
  if (pid == 0) {
    ::setsid();
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD}) {
      ::signal(s, SIG_DFL);
    }
    if (::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(err, STDERR_FILENO) < 0) {
      const int e = errno;
      (void)!::write(report[1], &e, sizeof(e));
      ::_exit(127);
    }
    ::execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!::write(report[1], &e, sizeof(e));
    ::_exit(127);
  }
  ::close(report[1]);
  fds.fds[4] = -1;
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(child_errno)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoToStatus(child_errno, program);
  }
  ProcessId id;
  id.pid = pid;
  id.start_ticks = ProcessStartTicks(pid).value_or(0);
  return id;
}

std::optional<uint64_t> ProcessStartTicks(pid_t pid) {
  std::optional<ProcStat> stat = ReadProcStat(pid);
  if (!stat) return std::nullopt;
  return stat->start_ticks;
}

bool ProcessRunning(const ProcessId& id) {
  if (id.pid <= 0) return false;
  std::optional<ProcStat> stat = ReadProcStat(id.pid);
  if (!stat || Dead(stat->state)) return false;
  return id.start_ticks == 0 || stat->start_ticks == id.start_ticks;
}

std::vector<pid_t> LiveGroupMembers(pid_t pgid) {
  std::vector<pid_t> members;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return members;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    std::optional<ProcStat> stat = ReadProcStat(static_cast<pid_t>(pid));
    if (stat && stat->pgrp == pgid && !Dead(stat->state)) {
      members.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(dir);
  return members;
}

bool GroupAlive(const ProcessId& leader) {
  if (leader.pid <= 1) return false;
  std::optional<uint64_t> ticks = ProcessStartTicks(leader.pid);
  // Another process has the leader's pid: the group it led is gone.
  if (ticks && leader.start_ticks != 0 && *ticks != leader.start_ticks) {
    return false;
  }
  return !LiveGroupMembers(leader.pid).empty();
}

// A leader without a start time (start_ticks 0) is never signalled: its pid
// may belong to another process by now.
bool SignalGroup(const ProcessId& leader, int signal) {
  if (leader.start_ticks == 0 || !GroupAlive(leader)) return false;
  return ::kill(-leader.pid, signal) == 0;
}

std::string ExitInfo::Describe() const {
  if (signal != 0) return StrCat("killed by SIG", SignalName(signal));
  if (code < 0) return "ended (exit status unknown)";
  return StrCat("exited with status ", code);
}

std::optional<ExitInfo> TryReap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  ExitInfo info;
  if (r < 0) return info;
  if (WIFEXITED(status)) {
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
  }
  return info;
}

std::vector<std::string> StopGroups(
    const std::vector<std::pair<std::string, ProcessId>>& groups,
    std::chrono::milliseconds grace, const std::function<void()>& tick,
    const std::function<bool(const std::string&)>& last) {
  constexpr auto kPoll = std::chrono::milliseconds(50);
  constexpr auto kAfterKill = std::chrono::seconds(5);
  auto is_last = [&](size_t i) { return last && last(groups[i].first); };
  auto alive = [&](bool only_first) {
    std::vector<size_t> out;
    for (size_t i = 0; i < groups.size(); ++i) {
      if (only_first && is_last(i)) continue;
      if (GroupAlive(groups[i].second)) out.push_back(i);
    }
    return out;
  };
  auto wait = [&](Clock::time_point deadline, bool only_first) {
    for (;;) {
      if (tick) tick();
      std::vector<size_t> left = alive(only_first);
      if (left.empty() || Clock::now() >= deadline) return left;
      std::this_thread::sleep_for(kPoll);
    }
  };
  const auto start = Clock::now();
  for (size_t i : alive(false)) {
    if (!is_last(i)) SignalGroup(groups[i].second, SIGTERM);
  }
  wait(start + grace / 2, /*only_first=*/true);
  for (size_t i : alive(false)) {
    if (is_last(i)) SignalGroup(groups[i].second, SIGTERM);
  }
  std::vector<size_t> left = wait(start + grace, /*only_first=*/false);
  std::vector<std::string> killed;
  for (size_t i : left) {
    if (SignalGroup(groups[i].second, SIGKILL)) {
      killed.push_back(groups[i].first);
    }
  }
  if (!killed.empty()) wait(Clock::now() + kAfterKill, false);
  return killed;
}

bool IsParameterServer(const std::string& task) {
  return IsTaskOf(task, Role::kPs);
}

}  // namespace dtf::launch
