#include "lib/launch/json_text.h"

#include <string_view>

#include "absl/strings/escaping.h"
#include "lib/base/strings.h"
#include "lib/base/utf8.h"

namespace dtf::launch {
namespace {

using Json = nlohmann::ordered_json;

std::string Quoted(std::string_view s) {
  return StrCat("\"", absl::CHexEscape(absl::string_view(s.data(), s.size())),
                "\"");
}

// JSON pointer escaping (RFC 6901): '~' as "~0", '/' as "~1".
std::string PointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> Find(const Json& j, const std::string& pointer) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (!IsUtf8(s))
      return StrCat(pointer.empty() ? "/" : pointer, ": ", Quoted(s));
    return std::nullopt;
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (auto bad = Find(j[i], StrCat(pointer, "/", i))) return bad;
    }
    return std::nullopt;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!IsUtf8(it.key())) {
        return StrCat(pointer.empty() ? "/" : pointer, ": the key ",
                      Quoted(it.key()));
      }
      if (auto bad =
              Find(it.value(), StrCat(pointer, "/", PointerToken(it.key())))) {
        return bad;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string JsonText(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::optional<std::string> FirstNonUtf8(const Json& j) { return Find(j, ""); }

}  // namespace dtf::launch
