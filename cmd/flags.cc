#include "cmd/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "lib/base/strings.h"

namespace dtf::cli {
namespace {

// 1000000 stays "1000000", 0.5 stays "0.5".
std::string ShortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

}  // namespace

CLI::Validator IntBetween(int64_t min, int64_t max) {
  // A bound that is only the type's own limit is not worth printing.
  const bool open_top = max == std::numeric_limits<int64_t>::max() ||
                        max == std::numeric_limits<int32_t>::max();
  return CLI::Validator(
      [min, max, open_top](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || end != text.c_str() + text.size()) {
          return StrCat("'", text, "' is not an integer");
        }
        if (errno != ERANGE && v >= min && v <= max) return std::string();
        const bool too_small = errno == ERANGE ? v < 0 : v < min;
        if (!open_top) {
          return StrCat("must be between ", min, " and ", max, ", got '", text,
                        "'");
        }
        return StrCat(too_small ? "must be at least " : "must be at most ",
                      too_small ? min : max, ", got '", text, "'");
      },
      open_top ? StrCat("INT >= ", min) : StrCat("INT in ", min, "..", max),
      "INT");
}

CLI::Validator NumberBetween(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() ||
            !std::isfinite(v)) {
          return StrCat("'", text, "' is not a number");
        }
        if (v >= min && v <= max) return std::string();
        if (std::isinf(max)) {
          return StrCat("must be at least ", ShortNumber(min), ", got '", text,
                        "'");
        }
        return StrCat("must be between ", ShortNumber(min), " and ",
                      ShortNumber(max), ", got '", text, "'");
      },
      std::isinf(max)
          ? StrCat("NUMBER >= ", ShortNumber(min))
          : StrCat("NUMBER in ", ShortNumber(min), "..", ShortNumber(max)),
      "NUMBER");
}

CLI::Validator NumberAtLeast(double min) {
  return NumberBetween(min, std::numeric_limits<double>::infinity());
}

}  // namespace dtf::cli
