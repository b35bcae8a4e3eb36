#include "lib/rpc/credentials.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdint>

#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace dtf::rpc {

StatusOr<std::string> ReadSecretFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, path);
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
    return InvalidArgumentError(
        StrCat(path, ": a secret file must be a regular file of mode 0600"));
  }
  DTF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  while (!text.empty() && std::isspace(uint8_t(text.back()))) text.pop_back();
  bool hex = text.size() >= 32 && text.size() <= 256;
  for (char c : text) hex = hex && std::isxdigit(uint8_t(c));
  if (!hex) {
    return InvalidArgumentError(
        StrCat(path, ": expected 32 to 256 hex digits"));
  }
  return text;
}

}  // namespace dtf::rpc
