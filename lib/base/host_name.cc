#include "lib/base/host_name.h"

namespace dtf {
namespace {

constexpr size_t kMaxSshHostLength = 253;

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

bool Allowed(char c, HostRule rule) {
  const bool name_char = IsAsciiAlnum(c) || c == '.' || c == '-' || c == '_';
  switch (rule) {
    case HostRule::kName:
      return name_char;
    case HostRule::kSshHost:
      return name_char || c == ':' || c == '[' || c == ']';
    case HostRule::kBindAddress:
      return c != ':' && c != '/' && c != '[' && c != ']' && c != ' ' &&
             c != '\t' && static_cast<unsigned char>(c) >= 0x20;
  }
  return false;
}

}  // namespace

size_t FindInvalidHostChar(std::string_view host, HostRule rule) {
  for (size_t i = 0; i < host.size(); ++i) {
    if (!Allowed(host[i], rule)) return i;
  }
  return std::string_view::npos;
}

bool IsValidHost(std::string_view host, HostRule rule) {
  if (host.empty()) return false;
  if (rule == HostRule::kSshHost &&
      (host.size() > kMaxSshHostLength || host[0] == '-')) {
    return false;
  }
  return FindInvalidHostChar(host, rule) == std::string_view::npos;
}

bool IsIpv6Address(std::string_view address) {
  const size_t zone = address.find('%');
  const std::string_view digits = address.substr(0, zone);
  if (digits.find(':') == std::string_view::npos) return false;
  for (char c : digits) {
    if (!IsHexDigit(c) && c != ':' && c != '.') return false;
  }
  return zone == std::string_view::npos ||
         IsValidHost(address.substr(zone + 1), HostRule::kName);
}

std::string_view HostOfAddress(std::string_view address) {
  const size_t colon = address.rfind(':');
  std::string_view host =
      colon == std::string_view::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace dtf
