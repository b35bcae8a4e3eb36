#include "lib/data/column_kind.h"

#include <cstdint>
#include <set>

#include "lib/data/text_tokens.h"

namespace dtf {

std::optional<DateFormat> DetectDateColumn(
    const std::vector<std::string_view>& sample) {
  if (sample.empty()) return std::nullopt;
  constexpr DateFormat kForms[] = {DateFormat::kIso, DateFormat::kCompact,
                                   DateFormat::kYmd, DateFormat::kMdy,
                                   DateFormat::kDmy};
  std::optional<DateFormat> best;
  size_t best_count = 0;
  for (DateFormat form : kForms) {
    size_t count = 0;
    for (std::string_view value : sample) count += ParseDate(value, form).ok();
    if (count > best_count) {
      best = form;
      best_count = count;
    }
  }
  // At least 95%: count / size >= 0.95 in integers.
  if (!best || best_count * 100 < sample.size() * 95) return std::nullopt;
  return best;
}

bool LooksLikeDate(const std::vector<std::string_view>& sample) {
  return DetectDateColumn(sample).has_value();
}

bool DatesHaveTime(const std::vector<std::string_view>& sample,
                   DateFormat format) {
  for (std::string_view value : sample) {
    StatusOr<DateTime> t = ParseDate(value, format);
    if (t.ok() && (t->hour != 0 || t->minute != 0 || t->second != 0)) {
      return true;
    }
  }
  return false;
}

bool LooksLikeText(const std::vector<std::string_view>& sample) {
  if (sample.empty()) return false;
  int64_t tokens = 0;
  std::set<std::string_view> distinct;
  for (std::string_view value : sample) {
    tokens += CountTextTokens(value);
    distinct.insert(value);
  }
  const auto n = static_cast<int64_t>(sample.size());
  return tokens >= 3 * n && static_cast<int64_t>(distinct.size()) * 2 >= n;
}

}  // namespace dtf
