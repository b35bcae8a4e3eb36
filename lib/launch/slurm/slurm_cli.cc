#include "lib/launch/slurm/slurm_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "lib/base/strings.h"

extern char** environ;

namespace dtf::launch::slurm {

std::string CommandResult::Describe(const std::string& program) const {
  std::string text = err.empty() ? out : err;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return StrCat(program, " exited with status ", exit_code,
                text.empty() ? std::string() : StrCat(": ", text));
}

StatusOr<std::string> FindSlurmCommand(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path == nullptr ? "/usr/bin:/bin" : path;
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::string file =
        StrCat(dir.empty() ? std::string_view(".") : dir, "/", name);
    if (::access(file.c_str(), X_OK) == 0) return file;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return NotFoundError(StrCat(
      name, ": not found in PATH (is Slurm installed on this machine?)"));
}

StatusOr<CommandResult> RunSlurmCommand(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout) {
  if (argv.empty()) return InvalidArgumentError("no command");
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return ErrnoToStatus(e, "pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr,
                                args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (rc == ENOENT) {
      return NotFoundError(StrCat(argv[0],
                                  ": not found in PATH (is Slurm installed "
                                  "on this machine?)"));
    }
    return ErrnoToStatus(rc, argv[0]);
  }
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool killed = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    const int n = ::poll(
        fds, 2,
        killed ? 1000
               : static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 ||
          (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        (i == 0 ? result.out : result.err)
            .append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (killed && n == 0) break;
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : -1;
  return result;
}

}  // namespace dtf::launch::slurm
