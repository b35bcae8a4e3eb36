// Dates and timestamps written as text, as a `date` feature reads them
// (docs/job-file.md, "date"): ISO 8601 and a few common day-month-year
// orders. Parsing is exact: a calendar date must exist (no 2023-02-29), and
// every character must be consumed.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

// Which text forms a parse accepts. In every form the date may be followed
// by a space or "T" and a time HH:MM[:SS[.fraction]], then optionally a UTC
// offset: Z, +HH:MM, +HHMM or +HH (or -).
enum class DateFormat {
  kAuto,     // any of the forms below, tried in this order
  kIso,      // 2024-03-05, 2024-03-05T14:30:00.123+02:00, 2024-03-05 14:30
  kYmd,      // 2024/03/05 (also 2024.03.05)
  kMdy,      // 03/05/2024, US order: month first (also 03-05-2024)
  kDmy,      // 05.03.2024: day first (also 05/03/2024, 05-03-2024 when
             // the format is pinned)
  kCompact,  // 20240305
};
// "auto", "iso8601", "ymd", "mdy", "dmy", "compact": the `format` key's
// values.
std::string_view DateFormatName(DateFormat format);
std::optional<DateFormat> DateFormatFromName(std::string_view name);

// A parsed date and time. The calendar fields are the wall-clock time as
// written; `epoch_days` is the instant in UTC (a written UTC offset is
// subtracted), in days since 1970-01-01T00:00:00Z, fraction included.
struct DateTime {
  int64_t year = 1970;
  int month = 1;      // 1..12
  int day = 1;        // 1..31
  int weekday = 3;    // 0 = Monday .. 6 = Sunday (1970-01-01 was a Thursday)
  int hour = 0;       // 0..23
  int minute = 0;     // 0..59
  double second = 0;  // [0, 60]
  double epoch_days = 0;

  bool operator==(const DateTime&) const = default;
};

// Parses `text` in `format` (kAuto: the first form that takes it).
// InvalidArgument otherwise, quoting the text and saying why (an unknown
// form, or a field out of range such as month 13 or 2023-02-29).
StatusOr<DateTime> ParseDate(std::string_view text,
                             DateFormat format = DateFormat::kAuto);

// The form of the date `text` is written in (never kAuto), if any.
std::optional<DateFormat> DetectDateFormat(std::string_view text);

// Days from 1970-01-01 to year-month-day in the proleptic Gregorian
// calendar. REQUIRES: a valid date.
int64_t DaysFromCivil(int64_t year, int month, int day);

}  // namespace dtf
