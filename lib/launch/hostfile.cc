#include "lib/launch/hostfile.h"

#include <charconv>

#include "lib/base/bounded_read.h"
#include "lib/base/file.h"
#include "lib/base/host_name.h"
#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A POSIX portable user name: letters, digits, '.', '_', '-', not starting
// with '-'.
bool ValidUser(std::string_view user) {
  if (user.empty() || user.size() > 32 || user[0] == '-') return false;
  for (char c : user) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::optional<int> ParseInt(std::string_view s, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

StatusOr<std::vector<HostEntry>> ParseHostfile(std::string_view text,
                                               std::string_view source) {
  std::vector<HostEntry> hosts;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    // The fields of the line, each with its column (1-based).
    std::vector<std::pair<std::string_view, size_t>> fields;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && IsSpace(line[i])) ++i;
      const size_t begin = i;
      while (i < line.size() && !IsSpace(line[i])) ++i;
      if (i > begin)
        fields.emplace_back(line.substr(begin, i - begin), begin + 1);
    }
    if (fields.empty()) continue;
    auto error = [&](size_t col, std::string_view what) {
      return InvalidArgumentError(
          StrCat(source, ":", line_no, ":", col, ": ", what));
    };
    HostEntry e;
    e.line = line_no;
    std::string_view host = fields[0].first;
    // Horovod's "host:N".
    if (size_t colon = host.rfind(':');
        colon != std::string_view::npos &&
        host.find(']') == std::string_view::npos && host.find(':') == colon) {
      std::optional<int> slots = ParseInt(host.substr(colon + 1), 1, 4096);
      if (!slots) {
        return error(fields[0].second + colon + 1,
                     StrCat("expected a slot count after ':', got \"",
                            host.substr(colon + 1), "\""));
      }
      e.slots = *slots;
      host = host.substr(0, colon);
    }
    if (!IsValidHost(host, HostRule::kSshHost)) {
      return error(fields[0].second,
                   StrCat("\"", host, "\" is not a host name or address"));
    }
    e.host = std::string(host);
    for (size_t f = 1; f < fields.size(); ++f) {
      const auto [field, col] = fields[f];
      const size_t eq = field.find('=');
      if (eq == std::string_view::npos) {
        return error(col, StrCat("expected key=value, got \"", field, "\""));
      }
      const std::string_view key = field.substr(0, eq);
      const std::string_view value = field.substr(eq + 1);
      const size_t value_col = col + eq + 1;
      auto number = [&](int min, int max) -> StatusOr<int> {
        std::optional<int> n = ParseInt(value, min, max);
        if (!n) {
          return error(value_col,
                       StrCat(key, ": expected an integer from ", min, " to ",
                              max, ", got \"", value, "\""));
        }
        return *n;
      };
      if (key == "slots" || key == "max_slots") {
        DTF_ASSIGN_OR_RETURN(e.slots, number(1, 4096));
      } else if (key == "gpus") {
        DTF_ASSIGN_OR_RETURN(e.gpus, number(0, 1024));
      } else if (key == "port") {
        DTF_ASSIGN_OR_RETURN(int port, number(1, 65535));
        e.port = port;
      } else if (key == "user") {
        if (!ValidUser(value)) {
          return error(value_col,
                       StrCat("user: \"", value, "\" is not a user name"));
        }
        e.user = std::string(value);
      } else if (key == "ps") {
        if (value != "true" && value != "false") {
          return error(value_col, StrCat("ps: expected true or false, got \"",
                                         value, "\""));
        }
        e.ps = value == "true";
      } else {
        return error(col, StrCat("unknown key \"", key,
                                 "\" (expected slots, gpus, ps, user or "
                                 "port)"));
      }
    }
    for (const HostEntry& other : hosts) {
      if (other.host == e.host) {
        return error(
            fields[0].second,
            StrCat("host ", e.host, " is already listed on line ", other.line));
      }
    }
    hosts.push_back(std::move(e));
  }
  if (hosts.empty()) {
    return InvalidArgumentError(StrCat(source, ": no hosts"));
  }
  return hosts;
}

StatusOr<std::vector<HostEntry>> LoadHostfile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text,
                       ReadFileToStringAtMost(path, kMaxHostfileBytes));
  return ParseHostfile(text, path);
}

}  // namespace dtf::launch
