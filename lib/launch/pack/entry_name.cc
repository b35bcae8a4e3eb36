#include "lib/launch/pack/entry_name.h"

#include <string_view>

#include "lib/base/utf8.h"

namespace dtf::pack {

Status CheckEntryName(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("empty entry name");
  if (name.front() == '/' || name.back() == '/' ||
      name.find('\\') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("not a relative '/'-separated entry name");
  }
  if (!IsUtf8(name)) {
    return InvalidArgumentError("entry names are UTF-8; this is not");
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return InvalidArgumentError(
          "entry names have no empty, '.' or '..' components");
    }
    start = end + 1;
  }
  return OkStatus();
}

}  // namespace dtf::pack
