#include "lib/data/date_parse.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

DateTime Parse(std::string_view text, DateFormat format = DateFormat::kAuto) {
  StatusOr<DateTime> t = ParseDate(text, format);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status();
  return t.ok() ? *t : DateTime{};
}

std::string Error(std::string_view text,
                  DateFormat format = DateFormat::kAuto) {
  StatusOr<DateTime> t = ParseDate(text, format);
  EXPECT_FALSE(t.ok()) << text;
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(t.status()));
}

TEST(ParseDate, IsoDate) {
  const DateTime t = Parse("2024-03-05");
  EXPECT_EQ(t.year, 2024);
  EXPECT_EQ(t.month, 3);
  EXPECT_EQ(t.day, 5);
  EXPECT_EQ(t.weekday, 1);  // a Tuesday
  EXPECT_EQ(t.hour, 0);
  EXPECT_DOUBLE_EQ(t.epoch_days, 19787);  // date(2024,3,5) - date(1970,1,1)
}

TEST(ParseDate, IsoTimestamps) {
  DateTime t = Parse("2024-03-05T14:30:00");
  EXPECT_EQ(t.hour, 14);
  EXPECT_EQ(t.minute, 30);
  EXPECT_DOUBLE_EQ(t.epoch_days, 19787 + 14.5 / 24);
  EXPECT_EQ(Parse("2024-03-05 14:30:00"), t);  // a space for the T
  EXPECT_EQ(Parse("2024-03-05T14:30"), t);
  EXPECT_EQ(Parse("2024-03-05T14:30:00Z"), t);

  t = Parse("2024-03-05T14:30:15.25");
  EXPECT_DOUBLE_EQ(t.second, 15.25);
  EXPECT_DOUBLE_EQ(t.epoch_days, 19787 + (14.5 * 3600 + 15.25) / 86400);

  // An offset keeps the wall clock in the calendar fields and moves the
  // instant to UTC.
  t = Parse("2024-03-05T01:00:00+02:00");
  EXPECT_EQ(t.day, 5);
  EXPECT_EQ(t.hour, 1);
  EXPECT_DOUBLE_EQ(t.epoch_days, 19787 - 1.0 / 24);
  EXPECT_EQ(Parse("2024-03-05T01:00:00+0200"), t);
  EXPECT_EQ(Parse("2024-03-05T01:00:00+02"), t);
  EXPECT_DOUBLE_EQ(Parse("2024-03-05T23:00:00-05:30").epoch_days,
                   19787 + (23 + 5.5) / 24);
}

TEST(ParseDate, CommonForms) {
  const DateTime iso = Parse("2024-03-05");
  EXPECT_EQ(Parse("2024/03/05"), iso);
  EXPECT_EQ(Parse("2024.03.05"), iso);
  EXPECT_EQ(Parse("03/05/2024"), iso);  // US: month first
  EXPECT_EQ(Parse("3/5/2024"), iso);
  EXPECT_EQ(Parse("05.03.2024"), iso);  // day first
  EXPECT_EQ(Parse("20240305"), iso);
  EXPECT_EQ(Parse("03/05/2024 14:30").hour, 14);
  EXPECT_EQ(Parse("20240305 14:30", DateFormat::kCompact).hour, 14);
  EXPECT_THAT(Error("20240305T143000Z", DateFormat::kCompact),
              HasSubstr("is not a date"));
}

TEST(ParseDate, APinnedFormatTakesOnlyItsForm) {
  const DateTime iso = Parse("2024-03-05");
  EXPECT_EQ(Parse("05/03/2024", DateFormat::kDmy), iso);
  EXPECT_EQ(Parse("05-03-2024", DateFormat::kDmy), iso);
  EXPECT_EQ(Parse("03-05-2024", DateFormat::kMdy), iso);
  EXPECT_EQ(Parse("2024-03-05", DateFormat::kIso), iso);
  EXPECT_EQ(Parse("20240305", DateFormat::kCompact), iso);
  EXPECT_EQ(Error("2024-03-05", DateFormat::kMdy),
            "\"2024-03-05\" is not a date in format \"mdy\"");
  EXPECT_EQ(Error("03/05/2024", DateFormat::kIso),
            "\"03/05/2024\" is not a date in format \"iso8601\"");
  // Auto reads 05/03/2024 as US; a day above 12 then fails.
  EXPECT_EQ(Parse("05/03/2024").month, 5);
  EXPECT_EQ(Error("25/03/2024"),
            "\"25/03/2024\" is not a date: month 25 is not in 1..12");
  EXPECT_EQ(Parse("25/03/2024", DateFormat::kDmy).day, 25);
}

TEST(ParseDate, Refusals) {
  EXPECT_EQ(Error("2024-13-05"),
            "\"2024-13-05\" is not a date: month 13 is not in 1..12");
  EXPECT_EQ(Error("2023-02-29"),
            "\"2023-02-29\" is not a date: day 29 is not in 1..28 for "
            "2023-02");
  EXPECT_EQ(Parse("2024-02-29").day, 29);  // a leap year
  EXPECT_EQ(Parse("2000-02-29").day, 29);
  EXPECT_THAT(Error("1900-02-29"), HasSubstr("day 29 is not in 1..28"));
  EXPECT_EQ(Error("2024-03-05T24:00"),
            "\"2024-03-05T24:00\" is not a date: hour 24 is not in 0..23");
  EXPECT_THAT(Error("2024-03-05T12:60"), HasSubstr("minute 60"));
  EXPECT_THAT(Error("0000-01-01"), HasSubstr("year 0 is before year 1"));
  for (std::string_view bad :
       {"", "yesterday", "2024-3-5", "2024-03-05T", "2024-03-05T14",
        "2024-03-05 14:30:00 ", " 2024-03-05", "2024-03-05X",
        "2024-03-05T14:30:00+2", "2024-03-05T14:30:00+25:00",
        "2024-03-05T14:30:00.", "2024/03-05", "2024-03-05x", "202403051",
        "12345", "1.5", "03/05/24"}) {
    EXPECT_THAT(Error(bad), HasSubstr("is not a date")) << bad;
  }
  EXPECT_EQ(Error("yesterday"),
            "\"yesterday\" is not a date (known forms: 2024-03-05, "
            "2024-03-05T14:30:00Z, 20240305, 2024/03/05, 03/05/2024, "
            "05.03.2024)");
}

TEST(ParseDate, WeekdaysAndEpochDays) {
  EXPECT_EQ(Parse("1970-01-01").weekday, 3);  // Thursday
  EXPECT_DOUBLE_EQ(Parse("1970-01-01").epoch_days, 0);
  EXPECT_DOUBLE_EQ(Parse("1969-12-31").epoch_days, -1);
  EXPECT_EQ(Parse("1969-12-31").weekday, 2);
  EXPECT_EQ(Parse("2024-03-10").weekday, 6);  // Sunday
  EXPECT_EQ(Parse("2024-03-11").weekday, 0);  // Monday
  EXPECT_EQ(Parse("1600-03-01").weekday, 2);  // Wednesday
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
}

TEST(DateFormat, NamesRoundTrip) {
  for (DateFormat f :
       {DateFormat::kAuto, DateFormat::kIso, DateFormat::kYmd, DateFormat::kMdy,
        DateFormat::kDmy, DateFormat::kCompact}) {
    EXPECT_EQ(DateFormatFromName(DateFormatName(f)), f);
  }
  EXPECT_FALSE(DateFormatFromName("iso").has_value());
  EXPECT_EQ(DetectDateFormat("2024-03-05T10:00"), DateFormat::kIso);
  EXPECT_EQ(DetectDateFormat("05.03.2024"), DateFormat::kDmy);
  EXPECT_EQ(DetectDateFormat("13/05/2024"), std::nullopt);
}

}  // namespace
}  // namespace dtf
