#include "lib/launch/ssh/ssh_error.h"

#include "lib/base/strings.h"

namespace dtf::launch::ssh {
namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

const char* SftpCodeText(int code) {
  switch (code) {
    case SSH_FX_OK:
      return "ok";
    case SSH_FX_EOF:
      return "end of file";
    case SSH_FX_NO_SUCH_FILE:
      return "no such file";
    case SSH_FX_PERMISSION_DENIED:
      return "permission denied";
    case SSH_FX_FAILURE:
      return "failure";
    case SSH_FX_BAD_MESSAGE:
      return "bad message";
    case SSH_FX_NO_CONNECTION:
      return "no connection";
    case SSH_FX_CONNECTION_LOST:
      return "connection lost";
    case SSH_FX_OP_UNSUPPORTED:
      return "operation not supported by the server";
    case SSH_FX_INVALID_HANDLE:
      return "invalid handle";
    case SSH_FX_NO_SUCH_PATH:
      return "no such path";
    case SSH_FX_FILE_ALREADY_EXISTS:
      return "file already exists";
    case SSH_FX_WRITE_PROTECT:
      return "write protected";
    case SSH_FX_NO_MEDIA:
      return "no media";
    default:
      return "unknown SFTP error";
  }
}

}  // namespace

std::string ErrorPrefix(std::string_view label) {
  return StrCat("ssh ", label, ": ");
}

Status SshError(ssh_session session, std::string_view label,
                std::string_view what) {
  std::string detail = "unknown error";
  int code = SSH_FATAL;
  if (session != nullptr) {
    const char* text = ssh_get_error(session);
    if (text != nullptr && *text != '\0') detail = text;
    code = ssh_get_error_code(session);
  }
  std::string message = StrCat(ErrorPrefix(label), what, ": ", detail);
  if (Contains(detail, "Timeout") || Contains(detail, "timed out") ||
      Contains(detail, "timeout")) {
    return DeadlineExceededError(message);
  }
  if (code == SSH_REQUEST_DENIED ||
      Contains(detail, "administratively prohibited")) {
    return PermissionDeniedError(message);
  }
  return UnavailableError(message);
}

Status SftpError(sftp_session sftp, std::string_view label,
                 std::string_view what, std::string_view path) {
  int code = sftp != nullptr ? sftp_get_error(sftp) : SSH_FX_NO_CONNECTION;
  std::string where = StrCat(what, " ", path);
  // SSH_FX_OK here means the transport failed, not the request.
  if (code == SSH_FX_OK && sftp != nullptr) {
    return SshError(sftp->session, label, where);
  }
  return SftpStatusError(code, label, what, path);
}

Status SftpStatusError(int code, std::string_view label, std::string_view what,
                       std::string_view path) {
  std::string message =
      StrCat(ErrorPrefix(label), what, " ", path, ": ", SftpCodeText(code));
  switch (code) {
    case SSH_FX_NO_SUCH_FILE:
    case SSH_FX_NO_SUCH_PATH:
      return NotFoundError(message);
    case SSH_FX_PERMISSION_DENIED:
    case SSH_FX_WRITE_PROTECT:
      return PermissionDeniedError(message);
    case SSH_FX_FILE_ALREADY_EXISTS:
      return AlreadyExistsError(message);
    case SSH_FX_NO_CONNECTION:
    case SSH_FX_CONNECTION_LOST:
      return UnavailableError(message);
    case SSH_FX_OP_UNSUPPORTED:
      return FailedPreconditionError(message);
    case SSH_FX_BAD_MESSAGE:
      return InvalidArgumentError(message);
    default:
      return InternalError(message);
  }
}

bool SftpNotFound(sftp_session sftp) {
  int code = sftp_get_error(sftp);
  return code == SSH_FX_NO_SUCH_FILE || code == SSH_FX_NO_SUCH_PATH;
}

}  // namespace dtf::launch::ssh
