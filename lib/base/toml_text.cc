#include "lib/base/toml_text.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "lib/base/strings.h"

namespace dtf::toml_util {

std::string Float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = FormatDouble(d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out +=
              fmt::format("\\u{:04X}",
                          static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string KeyPart(std::string_view key) {
  const bool bare =
      !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  return bare ? std::string(key) : Quote(key);
}

}  // namespace dtf::toml_util
