#include "lib/data/date_parse.h"

#include <cmath>
#include <string>

#include "lib/base/strings.h"

namespace dtf {
namespace {

// Reads `text` left to right.
struct DateCursor {
  std::string_view text;
  size_t at = 0;

  bool done() const { return at == text.size(); }
  char peek() const { return done() ? '\0' : text[at]; }
  bool Take(char c) {
    if (peek() != c) return false;
    ++at;
    return true;
  }
  // Between `min` and `max` ASCII digits as a number; false when fewer.
  bool Digits(int min, int max, int64_t* value) {
    int n = 0;
    int64_t v = 0;
    while (n < max && !done() && text[at] >= '0' && text[at] <= '9') {
      v = v * 10 + (text[at] - '0');
      ++at;
      ++n;
    }
    *value = v;
    return n >= min;
  }
};

struct DateFields {
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0;
  double second = 0;
  int64_t offset_minutes = 0;
};

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// The optional time and UTC offset after a date: nothing, or " " / "T" then
// HH:MM[:SS[.fraction]], then optionally Z, +HH:MM, +HHMM or +HH (or -).
bool ReadTime(DateCursor& c, DateFields* f) {
  if (c.done()) return true;
  if (!c.Take('T') && !c.Take(' ')) return false;
  if (!c.Digits(2, 2, &f->hour) || !c.Take(':') ||
      !c.Digits(2, 2, &f->minute)) {
    return false;
  }
  if (c.Take(':')) {
    int64_t whole = 0;
    if (!c.Digits(2, 2, &whole)) return false;
    f->second = double(whole);
    if (c.Take('.') || c.Take(',')) {
      double scale = 0.1;
      int n = 0;
      while (!c.done() && c.peek() >= '0' && c.peek() <= '9') {
        f->second += scale * (c.peek() - '0');
        scale /= 10;
        ++c.at;
        ++n;
      }
      if (n == 0) return false;
    }
  }
  if (c.Take('Z')) return c.done();
  const char sign = c.peek();
  if (sign != '+' && sign != '-') return c.done();
  ++c.at;
  int64_t hours = 0;
  int64_t minutes = 0;
  if (!c.Digits(2, 2, &hours)) return false;
  if (c.Take(':')) {
    if (!c.Digits(2, 2, &minutes)) return false;
  } else if (!c.done() && !c.Digits(2, 2, &minutes)) {
    return false;
  }
  if (hours > 23 || minutes > 59) return false;
  f->offset_minutes = (sign == '-' ? -1 : 1) * (hours * 60 + minutes);
  return c.done();
}

// Three numbers separated by one of `seps` (the same one twice), of
// `widths` digits each ({min, max}), followed by the optional time.
bool ReadTriple(DateCursor& c, std::string_view seps, const int (&widths)[3][2],
                int64_t (&v)[3], DateFields* f) {
  if (!c.Digits(widths[0][0], widths[0][1], &v[0])) return false;
  const char sep = c.peek();
  if (seps.find(sep) == std::string_view::npos || sep == '\0') return false;
  ++c.at;
  if (!c.Digits(widths[1][0], widths[1][1], &v[1]) || !c.Take(sep) ||
      !c.Digits(widths[2][0], widths[2][1], &v[2])) {
    return false;
  }
  return ReadTime(c, f);
}

bool ReadForm(std::string_view text, DateFormat form, bool pinned,
              DateFields* f) {
  DateCursor c{text};
  int64_t v[3] = {0, 0, 0};
  static constexpr int kYmdWidths[3][2] = {{4, 4}, {1, 2}, {1, 2}};
  static constexpr int kIsoWidths[3][2] = {{4, 4}, {2, 2}, {2, 2}};
  static constexpr int kDmyWidths[3][2] = {{1, 2}, {1, 2}, {4, 4}};
  switch (form) {
    case DateFormat::kIso:
      if (!ReadTriple(c, "-", kIsoWidths, v, f)) return false;
      f->year = v[0], f->month = v[1], f->day = v[2];
      return true;
    case DateFormat::kYmd:
      if (!ReadTriple(c, pinned ? "/.-" : "/.", kYmdWidths, v, f)) {
        return false;
      }
      f->year = v[0], f->month = v[1], f->day = v[2];
      return true;
    case DateFormat::kMdy:
      if (!ReadTriple(c, pinned ? "/-." : "/", kDmyWidths, v, f)) return false;
      f->month = v[0], f->day = v[1], f->year = v[2];
      return true;
    case DateFormat::kDmy:
      if (!ReadTriple(c, pinned ? "./-" : ".", kDmyWidths, v, f)) return false;
      f->day = v[0], f->month = v[1], f->year = v[2];
      return true;
    case DateFormat::kCompact:
      if (!c.Digits(4, 4, &f->year) || !c.Digits(2, 2, &f->month) ||
          !c.Digits(2, 2, &f->day)) {
        return false;
      }
      return ReadTime(c, f);
    case DateFormat::kAuto:
      break;
  }
  return false;
}

// Empty when the fields make a real date and time; else why not.
std::string CheckFields(const DateFields& f) {
  if (f.year < 1) return StrCat("year ", f.year, " is before year 1");
  if (f.month < 1 || f.month > 12) {
    return StrCat("month ", f.month, " is not in 1..12");
  }
  const int days = DaysInMonth(f.year, f.month);
  if (f.day < 1 || f.day > days) {
    return StrCat("day ", f.day, " is not in 1..", days, " for ", f.year, "-",
                  f.month < 10 ? "0" : "", f.month);
  }
  if (f.hour > 23) return StrCat("hour ", f.hour, " is not in 0..23");
  if (f.minute > 59) return StrCat("minute ", f.minute, " is not in 0..59");
  if (f.second >= 61) return StrCat("second ", f.second, " is not below 61");
  return "";
}

DateTime ToDateTime(const DateFields& f) {
  DateTime t;
  t.year = f.year;
  t.month = int(f.month);
  t.day = int(f.day);
  t.hour = int(f.hour);
  t.minute = int(f.minute);
  t.second = f.second;
  const int64_t days = DaysFromCivil(f.year, t.month, t.day);
  t.weekday = int(((days % 7) + 7 + 3) % 7);
  const double seconds =
      double(f.hour * 3600 + (f.minute - f.offset_minutes) * 60) + f.second;
  t.epoch_days = double(days) + seconds / 86400.0;
  return t;
}

constexpr DateFormat kDateForms[] = {DateFormat::kIso, DateFormat::kCompact,
                                     DateFormat::kYmd, DateFormat::kMdy,
                                     DateFormat::kDmy};

}  // namespace

std::string_view DateFormatName(DateFormat format) {
  static constexpr std::string_view kNames[] = {"auto", "iso8601", "ymd",
                                                "mdy",  "dmy",     "compact"};
  return kNames[static_cast<int>(format)];
}

std::optional<DateFormat> DateFormatFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DateFormat::kCompact); ++i) {
    if (DateFormatName(static_cast<DateFormat>(i)) == name) {
      return static_cast<DateFormat>(i);
    }
  }
  return std::nullopt;
}

int64_t DaysFromCivil(int64_t year, int month, int day) {
  // Howard Hinnant's days_from_civil.
  const int64_t y = month <= 2 ? year - 1 : year;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t mp = (month + 9) % 12;
  const int64_t doy = (153 * mp + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

StatusOr<DateTime> ParseDate(std::string_view text, DateFormat format) {
  for (DateFormat form : kDateForms) {
    if (format != DateFormat::kAuto && form != format) continue;
    DateFields f;
    if (!ReadForm(text, form, format != DateFormat::kAuto, &f)) continue;
    const std::string why = CheckFields(f);
    if (!why.empty()) {
      return InvalidArgumentError(
          StrCat(QuoteForMessage(text), " is not a date: ", why));
    }
    return ToDateTime(f);
  }
  if (format != DateFormat::kAuto) {
    return InvalidArgumentError(StrCat(QuoteForMessage(text),
                                       " is not a date in format \"",
                                       DateFormatName(format), "\""));
  }
  return InvalidArgumentError(
      StrCat(QuoteForMessage(text),
             " is not a date (known forms: 2024-03-05, 2024-03-05T14:30:00Z, "
             "20240305, 2024/03/05, 03/05/2024, 05.03.2024)"));
}

std::optional<DateFormat> DetectDateFormat(std::string_view text) {
  for (DateFormat form : kDateForms) {
    DateFields f;
    if (ReadForm(text, form, false, &f) && CheckFields(f).empty()) return form;
  }
  return std::nullopt;
}

}  // namespace dtf
