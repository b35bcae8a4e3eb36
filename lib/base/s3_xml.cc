#include "lib/base/s3_xml.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "lib/base/status.h"

namespace dtf {
namespace {

void AppendCodePoint(unsigned long cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out.append(s.substr(i));
      break;
    }
    const std::string_view name = s.substr(i + 1, semi - i - 1);
    if (name == "amp") {
      out.push_back('&');
    } else if (name == "lt") {
      out.push_back('<');
    } else if (name == "gt") {
      out.push_back('>');
    } else if (name == "quot") {
      out.push_back('"');
    } else if (name == "apos") {
      out.push_back('\'');
    } else if (name.starts_with("#x") || name.starts_with("#X")) {
      AppendCodePoint(
          std::strtoul(std::string(name.substr(2)).c_str(), nullptr, 16), &out);
    } else if (name.starts_with("#")) {
      AppendCodePoint(
          std::strtoul(std::string(name.substr(1)).c_str(), nullptr, 10), &out);
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

}  // namespace

std::vector<std::string_view> XmlElements(std::string_view xml,
                                          std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = absl::StrCat("<", ToAbsl(tag), ">");
  const std::string close = absl::StrCat("</", ToAbsl(tag), ">");
  size_t pos = 0;
  while (true) {
    const size_t start = xml.find(open, pos);
    if (start == std::string_view::npos) break;
    const size_t body = start + open.size();
    const size_t end = xml.find(close, body);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(body, end - body));
    pos = end + close.size();
  }
  return out;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> found = XmlElements(xml, tag);
  return found.empty() ? std::string() : Unescape(found.front());
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace dtf
