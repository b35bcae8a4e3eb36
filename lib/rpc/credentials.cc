#include "lib/rpc/credentials.h"

#include <cctype>
#include <cstdint>

#include "lib/base/bounded_read.h"
#include "lib/base/strings.h"

namespace dtf::rpc {

StatusOr<std::string> ReadSecretFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(std::string text,
                       ReadPrivateFile(path, kMaxSecretFileBytes));
  while (!text.empty() && std::isspace(uint8_t(text.back()))) text.pop_back();
  bool hex = text.size() >= 32 && text.size() <= 256;
  for (char c : text) hex = hex && std::isxdigit(uint8_t(c));
  if (!hex) {
    return InvalidArgumentError(
        StrCat(path, ": expected 32 to 256 hex digits"));
  }
  return text;
}

RunCredentials ForTask(const RunCredentials& creds, std::string_view task) {
  RunCredentials out = creds;
  if (out.tls.on() && out.tls.by_task_name) out.tls.server_name = task;
  return out;
}

}  // namespace dtf::rpc
