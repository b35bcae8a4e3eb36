#include "lib/launch/run_id.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch {

namespace fs = std::filesystem;

std::string FormatRunId(std::time_t when, uint16_t suffix) {
  std::tm tm{};
  ::localtime_r(&when, &tm);
  return fmt::format("{:04d}{:02d}{:02d}-{:02d}{:02d}{:02d}-{:04x}",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, suffix);
}

StatusOr<std::string> NewRunId() {
  DTF_ASSIGN_OR_RETURN(const std::string hex, RandomHex(2));
  return FormatRunId(std::time(nullptr),
                     static_cast<uint16_t>(std::stoul(hex, nullptr, 16)));
}

bool LooksLikeRunId(std::string_view s) {
  if (s.size() != 20 || s[8] != '-' || s[15] != '-') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 15) continue;
    const char c = s[i];
    const bool digit = c >= '0' && c <= '9';
    if (i < 15 ? !digit : !(digit || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

StatusOr<std::string> RandomHex(size_t bytes) {
  constexpr char kDevice[] = "/dev/urandom";
  const int fd = ::open(kDevice, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, kDevice);
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::read(fd, raw.data() + got, bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      return ErrnoToStatus(error, kDevice);
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

namespace {

// Creates `path` (AlreadyExists when it is there) with mode 0600 and
// writes `text` to it, fsynced.
Status WriteExclusive(const std::string& path, std::string_view text) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoToStatus(errno, path);
  size_t done = 0;
  int error = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) return ErrnoToStatus(error, path);
  return OkStatus();
}

}  // namespace

Status WriteNewSecret(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string secret, RandomHex(32));
  // No newline: the bytes are the secret.
  return WriteExclusive(path, secret);
}

Status WritePrivateRunFile(const std::string& path, std::string_view contents) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, path);
  }
  return WriteExclusive(path, contents);
}

StatusOr<std::string> CreateRunDir(const std::string& runs_dir,
                                   const std::string& wanted) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), runs_dir);
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::string id = wanted;
    if (id == kUnchosenRunId) {
      DTF_ASSIGN_OR_RETURN(id, NewRunId());
    }
    const std::string dir = (fs::path(runs_dir) / id).string();
    if (::mkdir(dir.c_str(), 0755) == 0) return id;
    if (errno != EEXIST || wanted != kUnchosenRunId) {
      return ErrnoToStatus(errno, dir);
    }
  }
  return AlreadyExistsError(StrCat(runs_dir, ": no free run id"));
}

Status ReopenRunDir(const std::string& runs_dir, const std::string& id) {
  const fs::path dir = fs::path(runs_dir) / id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFoundError(StrCat(dir.string(), ": no such run directory"));
  }
  for (const char* name : {kSecretFile, kStopFile}) {
    fs::remove(dir / name, ec);
    if (ec) return ErrnoToStatus(ec.value(), (dir / name).string());
  }
  // The run's TLS material is made anew with its new secret.
  fs::remove_all(dir / kTlsDir, ec);
  if (ec) return ErrnoToStatus(ec.value(), (dir / kTlsDir).string());
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_directory()) continue;
    for (const char* name : {kReadyFile, kExitFile}) {
      std::error_code rm;
      fs::remove(it->path() / name, rm);
      if (rm) return ErrnoToStatus(rm.value(), (it->path() / name).string());
    }
  }
  if (ec) return ErrnoToStatus(ec.value(), dir.string());
  return OkStatus();
}

StatusOr<std::string> ClaimRunDir(const std::string& runs_dir,
                                  const std::string& wanted, bool resume) {
  if (!resume) return CreateRunDir(runs_dir, wanted);
  DTF_RETURN_IF_ERROR(ReopenRunDir(runs_dir, wanted));
  return wanted;
}

}  // namespace dtf::launch
