#include "lib/launch/slurm/hostlist.h"

#include <cstdint>
#include <utility>

#include "lib/base/strings.h"

namespace dtf::launch::slurm {
namespace {

// One piece of an item: fixed text, or the values of a bracket group.
struct HostlistPart {
  std::vector<std::string> values;
};

class HostlistParser {
 public:
  explicit HostlistParser(std::string_view list) : list_(list) {}

  StatusOr<std::vector<std::string>> Parse() {
    std::vector<std::string> hosts;
    size_t pos = 0;
    while (pos < list_.size()) {
      const char c = list_[pos];
      if (c == ',' || IsSpace(c)) {
        ++pos;
        continue;
      }
      DTF_RETURN_IF_ERROR(ParseItem(&pos, &hosts));
    }
    return hosts;
  }

 private:
  static bool IsSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  Status Error(size_t pos, std::string_view what) const {
    return InvalidArgumentError(
        StrCat("hostlist ", QuoteForMessage(list_), ":", pos + 1, ": ", what));
  }

  // The item starting at *pos, up to a separator outside brackets.
  Status ParseItem(size_t* pos, std::vector<std::string>* hosts) {
    std::vector<HostlistPart> parts;
    const size_t start = *pos;
    size_t count = 1;
    while (*pos < list_.size()) {
      const char c = list_[*pos];
      if (c == ',' || IsSpace(c)) break;
      if (c == ']') return Error(*pos, "']' without '['");
      HostlistPart part;
      if (c == '[') {
        DTF_RETURN_IF_ERROR(ParseGroup(pos, &part.values));
      } else {
        size_t end = *pos;
        while (end < list_.size() && list_[end] != '[' && list_[end] != ']' &&
               list_[end] != ',' && !IsSpace(list_[end])) {
          ++end;
        }
        part.values.emplace_back(list_.substr(*pos, end - *pos));
        *pos = end;
      }
      count *= part.values.size();
      if (count + hosts->size() > kMaxHostlistHosts) {
        return Error(start, StrCat("expands to more than ", kMaxHostlistHosts,
                                   " host names"));
      }
      parts.push_back(std::move(part));
    }
    // Every combination, the first part changing slowest.
    std::vector<size_t> at(parts.size(), 0);
    for (size_t n = 0; n < count; ++n) {
      std::string host;
      for (size_t i = 0; i < parts.size(); ++i) host += parts[i].values[at[i]];
      hosts->push_back(std::move(host));
      for (size_t i = parts.size(); i-- > 0;) {
        if (++at[i] < parts[i].values.size()) break;
        at[i] = 0;
      }
    }
    return OkStatus();
  }

  // A number of digits at *pos (advanced past it) into *text.
  Status ParseNumber(size_t* pos, std::string_view* text) const {
    const size_t start = *pos;
    while (*pos < list_.size() && IsDigit(list_[*pos])) ++*pos;
    if (*pos == start) {
      if (*pos >= list_.size()) return Error(*pos, "'[' without ']'");
      return Error(*pos, StrCat("expected a number, got '",
                                std::string(1, list_[*pos]), "'"));
    }
    if (*pos - start > 18) return Error(start, "number too long");
    *text = list_.substr(start, *pos - start);
    return OkStatus();
  }

  static uint64_t ToNumber(std::string_view digits) {
    uint64_t n = 0;
    for (char c : digits) n = n * 10 + static_cast<uint64_t>(c - '0');
    return n;
  }

  // The group "[...]" at *pos: its values, zero-padded to the width of each
  // range's start.
  Status ParseGroup(size_t* pos, std::vector<std::string>* values) {
    const size_t open = *pos;
    ++*pos;
    while (true) {
      if (*pos >= list_.size()) return Error(open, "'[' without ']'");
      if (list_[*pos] == ']') return Error(*pos, "empty range");
      std::string_view lo;
      const size_t lo_pos = *pos;
      DTF_RETURN_IF_ERROR(ParseNumber(pos, &lo));
      std::string_view hi = lo;
      if (*pos < list_.size() && list_[*pos] == '-') {
        ++*pos;
        DTF_RETURN_IF_ERROR(ParseNumber(pos, &hi));
      }
      const uint64_t a = ToNumber(lo);
      const uint64_t b = ToNumber(hi);
      if (b < a) {
        return Error(lo_pos, StrCat("range ", lo, "-", hi, " runs backwards"));
      }
      if (b - a >= kMaxHostlistHosts ||
          values->size() + (b - a) >= kMaxHostlistHosts) {
        return Error(lo_pos, StrCat("expands to more than ", kMaxHostlistHosts,
                                    " host names"));
      }
      for (uint64_t v = a; v <= b; ++v) {
        std::string digits = std::to_string(v);
        if (digits.size() < lo.size()) {
          digits.insert(0, lo.size() - digits.size(), '0');
        }
        values->push_back(std::move(digits));
      }
      if (*pos >= list_.size()) return Error(open, "'[' without ']'");
      const char c = list_[*pos];
      ++*pos;
      if (c == ']') return OkStatus();
      if (c != ',') {
        if (c == '[') return Error(*pos - 1, "'[' inside brackets");
        return Error(*pos - 1, StrCat("expected ',', '-' or ']', got '",
                                      std::string(1, c), "'"));
      }
    }
  }

  std::string_view list_;
};

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view list) {
  return HostlistParser(list).Parse();
}

}  // namespace dtf::launch::slurm
