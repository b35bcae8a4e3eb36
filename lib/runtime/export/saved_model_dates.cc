// The SavedModel graph's date features: each value parsed with stock string
// ops (regular expressions, StringToNumber) as lib/data/date_parse.cc parses
// it, and its parts derived as lib/runtime/model/feature_layer_transform.cc
// derives them.
//
// A value is first matched against each text form its format allows, in
// date_parse.cc's order; the first form that matches rewrites it as
// "year month day|time". A second expression splits the time into hour,
// minute, second, offset sign, offset hours and offset minutes, so every
// row becomes nine numbers. Values no form takes, and dates that do not
// exist (2023-02-29, month 13, hour 24), fail the batch through an Assert
// that quotes them.
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/runtime/export/saved_model_builder.h"

namespace dtf::runtime::saved_model_internal {

using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

namespace {

// The optional time and UTC offset after a date (date_parse.cc's ReadTime),
// as one group: " " or "T", HH:MM[:SS[.fraction]], then Z, +HH:MM, +HHMM or
// +HH (or -), the offset's hours at most 23 and minutes at most 59.
constexpr std::string_view kTime =
    "((?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?"
    "(?:Z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?)?)";

// "year month day|time" split into nine numbers: year, month, day, hour,
// minute, second (with its fraction), offset sign (-1 or 1), offset hours,
// offset minutes; an absent field reads 0.
constexpr std::string_view kFields =
    "^([0-9]+) ([0-9]+) ([0-9]+)\\|(?:[T ]([0-9]{2}):([0-9]{2})"
    "(?::([0-9]{2}(?:\\.[0-9]+)?))?(?:Z|(?:(-)|\\+)([0-9]{2})"
    "(?::?([0-9]{2}))?)?)?$";
constexpr std::string_view kFieldsRewrite =
    "\\1 \\2 \\3 0\\4 0\\5 0\\6 \\71 0\\8 0\\9";
constexpr int kNumFields = 9;

// One text form: the date's three numbers as groups 1-3, then kTime as
// group 4; `rewrite` orders them year, month, day.
struct DateForm {
  std::string pattern;
  std::string_view rewrite;
};

// date_parse.cc's forms for `format`, in the order ParseDate tries them;
// a form that takes one of several separators is one form per separator.
std::vector<DateForm> FormsOf(DateFormat format) {
  const bool pinned = format != DateFormat::kAuto;
  auto any = [&](DateFormat form) { return !pinned || format == form; };
  auto escaped = [](char sep) {
    return sep == '.' ? std::string("\\.") : std::string(1, sep);
  };
  std::vector<DateForm> forms;
  auto triple = [&](std::string_view seps, std::string_view a,
                    std::string_view b, std::string_view c,
                    std::string_view rewrite) {
    for (char sep : seps) {
      const std::string s = escaped(sep);
      forms.push_back(DateForm{
          StrCat("(", a, ")", s, "(", b, ")", s, "(", c, ")", kTime), rewrite});
    }
  };
  constexpr std::string_view kYear = "[0-9]{4}";
  constexpr std::string_view kTwo = "[0-9]{2}";
  constexpr std::string_view kOneOrTwo = "[0-9]{1,2}";
  if (any(DateFormat::kIso)) {
    triple("-", kYear, kTwo, kTwo, "\\1 \\2 \\3|\\4");
  }
  if (any(DateFormat::kCompact)) {
    forms.push_back(
        DateForm{StrCat("(", kYear, ")(", kTwo, ")(", kTwo, ")", kTime),
                 "\\1 \\2 \\3|\\4"});
  }
  if (any(DateFormat::kYmd)) {
    triple(pinned ? "/.-" : "/.", kYear, kOneOrTwo, kOneOrTwo,
           "\\1 \\2 \\3|\\4");
  }
  if (any(DateFormat::kMdy)) {
    triple(pinned ? "/-." : "/", kOneOrTwo, kOneOrTwo, kYear,
           "\\3 \\1 \\2|\\4");
  }
  if (any(DateFormat::kDmy)) {
    triple(pinned ? "./-" : ".", kOneOrTwo, kOneOrTwo, kYear,
           "\\3 \\2 \\1|\\4");
  }
  return forms;
}

// The nine numbers of each row, in kFields' order: int64 [n] each, but for
// the second, double [n], which keeps its fraction.
using DateFields = std::array<std::string, kNumFields>;

// "year month day|time" of each row as its nine numbers.
DateFields DateFieldsOf(TfGraph& g, const std::string& sc,
                        const std::string& canonical) {
  NodeDef* point =
      g.Add(StrCat(sc, "/decimal_point"), "StaticRegexReplace", {canonical});
  TfGraph::SetString(point, "pattern", ",");
  TfGraph::SetString(point, "rewrite", ".");
  TfGraph::SetBool(point, "replace_global", true);
  NodeDef* fields =
      g.Add(StrCat(sc, "/fields"), "StaticRegexReplace", {point->name()});
  TfGraph::SetString(fields, "pattern", kFields);
  TfGraph::SetString(fields, "rewrite", kFieldsRewrite);
  TfGraph::SetBool(fields, "replace_global", false);
  NodeDef* split = g.Add(StrCat(sc, "/split"), "StringSplitV2",
                         {fields->name(), g.String(StrCat(sc, "/space"), " ")});
  TfGraph::SetInt(split, "maxsplit", -1);
  NodeDef* numbers =
      g.Add(StrCat(sc, "/numbers"), "StringToNumber",
            {g.Reshape(StrCat(sc, "/grid"), TfOutput(split->name(), 1),
                       {-1, kNumFields}, DT_STRING)});
  TfGraph::SetType(numbers, "out_type", DT_DOUBLE);
  NodeDef* unpack = g.Add(StrCat(sc, "/unpack"), "Unpack", {numbers->name()});
  TfGraph::SetType(unpack, "T", DT_DOUBLE);
  TfGraph::SetInt(unpack, "num", kNumFields);
  TfGraph::SetInt(unpack, "axis", 1);
  // Each field as int64, but for the second, which keeps its fraction.
  DateFields v;
  static constexpr std::string_view kNames[kNumFields] = {
      "year",   "month",       "day",          "hour",          "minute",
      "second", "offset_sign", "offset_hours", "offset_minutes"};
  for (int i = 0; i < kNumFields; ++i) {
    const std::string out = TfOutput(unpack->name(), i);
    v[size_t(i)] =
        i == 5 ? out
               : g.Cast(StrCat(sc, "/", kNames[i]), out, DT_DOUBLE, DT_INT64);
  }
  return v;
}

// One date feature's arithmetic in the graph, under scope `sc`: the
// constants it asks for are named c0, c1, ... in the order asked.
class DateMath {
 public:
  DateMath(TfGraph& g, const std::string& sc) : g_(g), sc_(sc) {}

  // The int64 constant `value`.
  std::string Num(int64_t value) {
    return g_.Int64(StrCat(sc_, "/c", k_++), value);
  }
  // `type` of a and b, of type t.
  std::string Op(std::string_view name, std::string_view type,
                 const std::string& a, const std::string& b,
                 DataType t = DT_INT64) {
    return g_.Op(StrCat(sc_, "/", name), type, {a, b}, t);
  }
  // The logical and of a and b.
  std::string Both(std::string_view name, const std::string& a,
                   const std::string& b) {
    return g_.Add(StrCat(sc_, "/", name), "LogicalAnd", {a, b})->name();
  }

  // bool [n]: the fields are a date and time that exist (date_parse.cc's
  // CheckFields).
  std::string Valid(const DateFields& v);
  // int64 [n]: days since 1970-01-01 (Howard Hinnant's days_from_civil).
  std::string DaysFromCivil(const DateFields& v);
  // double [n]: the instant, in days since 1970-01-01 UTC.
  std::string Instant(const DateFields& v, const std::string& days);
  // The parts the model reads, each depending on every check in `checks`.
  SmDate Parts(const std::vector<std::string>& checks, const DateFields& v,
               const std::string& weekday, const std::string& instant);

 private:
  // bool [n]: a leap year.
  std::string Leap(const std::string& year);

  TfGraph& g_;
  const std::string& sc_;
  int k_ = 0;
};

std::string DateMath::Leap(const std::string& year) {
  return g_
      .Add(StrCat(sc_, "/leap"), "LogicalOr",
           {Both("by_4_not_100",
                 Op("by_4", "Equal", Op("mod_4", "FloorMod", year, Num(4)),
                    Num(0)),
                 Op("not_by_100", "NotEqual",
                    Op("mod_100", "FloorMod", year, Num(100)), Num(0))),
            Op("by_400", "Equal", Op("mod_400", "FloorMod", year, Num(400)),
               Num(0))})
      ->name();
}

std::string DateMath::Valid(const DateFields& v) {
  const std::string& year = v[0];
  const std::string& month = v[1];
  const std::string& day = v[2];
  const std::string& hour = v[3];
  const std::string& minute = v[4];
  const std::string& second = v[5];
  const std::string leap = Leap(year);
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30,
                                      31, 31, 30, 31, 30, 31};
  const std::string month_days =
      g_.Gather(StrCat(sc_, "/month_days"),
                g_.Int64s(StrCat(sc_, "/days_in"), kDays, {12}),
                Op("month_index", "FloorMod",
                   Op("month_0", "Sub", month, Num(1)), Num(12)),
                DT_INT64);
  const std::string days_in_month = Op(
      "days_in_month", "AddV2", month_days,
      g_.Cast(
          StrCat(sc_, "/leap_day"),
          Both("leap_february", Op("february", "Equal", month, Num(2)), leap),
          DT_BOOL, DT_INT64));
  std::string valid = Op("year_ok", "GreaterEqual", year, Num(1));
  const std::string conditions[] = {
      Op("month_ge_1", "GreaterEqual", month, Num(1)),
      Op("month_le_12", "LessEqual", month, Num(12)),
      Op("day_ge_1", "GreaterEqual", day, Num(1)),
      Op("day_le_days", "LessEqual", day, days_in_month),
      Op("hour_ok", "LessEqual", hour, Num(23)),
      Op("minute_ok", "LessEqual", minute, Num(59)),
      Op("second_ok", "Less", second, g_.Double(StrCat(sc_, "/c61"), 61.0),
         DT_DOUBLE)};
  for (size_t i = 0; i < std::size(conditions); ++i) {
    valid = Both(StrCat("valid_", i), valid, conditions[i]);
  }
  return valid;
}

std::string DateMath::DaysFromCivil(const DateFields& v) {
  const std::string& year = v[0];
  const std::string& month = v[1];
  const std::string& day = v[2];
  const std::string y =
      Op("y", "Sub", year,
         g_.Cast(StrCat(sc_, "/before_march"),
                 Op("jan_feb", "LessEqual", month, Num(2)), DT_BOOL, DT_INT64));
  const std::string era = Op("era", "FloorDiv", y, Num(400));
  const std::string yoe =
      Op("yoe", "Sub", y, Op("era_years", "Mul", era, Num(400)));
  const std::string mp =
      Op("mp", "FloorMod", Op("month_9", "AddV2", month, Num(9)), Num(12));
  const std::string doy = Op(
      "doy", "Sub",
      Op("doy_1", "AddV2",
         Op("doy_0", "FloorDiv",
            Op("mp_153", "AddV2", Op("mp_x153", "Mul", mp, Num(153)), Num(2)),
            Num(5)),
         day),
      Num(1));
  const std::string doe =
      Op("doe", "AddV2",
         Op("doe_2", "Sub",
            Op("doe_1", "AddV2", Op("yoe_365", "Mul", yoe, Num(365)),
               Op("yoe_4", "FloorDiv", yoe, Num(4))),
            Op("yoe_100", "FloorDiv", yoe, Num(100))),
         doy);
  return Op("days", "Sub",
            Op("days_0", "AddV2", Op("era_days", "Mul", era, Num(146097)), doe),
            Num(719468));
}

std::string DateMath::Instant(const DateFields& v, const std::string& days) {
  const std::string& hour = v[3];
  const std::string& minute = v[4];
  const std::string& second = v[5];
  const std::string offset =
      Op("offset", "Mul", v[6],
         Op("offset_1", "AddV2", Op("offset_h", "Mul", v[7], Num(60)), v[8]));
  const std::string clock = Op(
      "clock_seconds", "AddV2", Op("hour_s", "Mul", hour, Num(3600)),
      Op("minute_s", "Mul", Op("minute_utc", "Sub", minute, offset), Num(60)));
  const std::string seconds =
      Op("seconds", "AddV2",
         g_.Cast(StrCat(sc_, "/clock_double"), clock, DT_INT64, DT_DOUBLE),
         second, DT_DOUBLE);
  return Op("instant", "AddV2",
            g_.Cast(StrCat(sc_, "/days_double"), days, DT_INT64, DT_DOUBLE),
            Op("day_fraction", "RealDiv", seconds,
               g_.Double(StrCat(sc_, "/c86400"), 86400.0), DT_DOUBLE),
            DT_DOUBLE);
}

SmDate DateMath::Parts(const std::vector<std::string>& checks,
                       const DateFields& v, const std::string& weekday,
                       const std::string& instant) {
  const std::string& year = v[0];
  const std::string& month = v[1];
  const std::string& day = v[2];
  const std::string& hour = v[3];
  std::vector<std::string> deps;
  for (const std::string& c : checks) deps.push_back("^" + c);
  auto checked = [&](std::string_view name, const std::string& x,
                     DataType type) {
    std::vector<std::string> inputs = {x};
    inputs.insert(inputs.end(), deps.begin(), deps.end());
    return g_.Op(StrCat(sc_, "/", name), "Identity", std::move(inputs), type);
  };
  SmDate out;
  out.year = checked(
      "year_value",
      g_.Cast(StrCat(sc_, "/year_float"), year, DT_INT64, DT_FLOAT), DT_FLOAT);
  out.epoch_days = checked(
      "epoch_days",
      g_.Cast(StrCat(sc_, "/instant_float"), instant, DT_DOUBLE, DT_FLOAT),
      DT_FLOAT);
  out.month =
      checked("month_id", Op("month_id_0", "Sub", month, Num(1)), DT_INT64);
  out.day = checked("day_id", Op("day_id_0", "Sub", day, Num(1)), DT_INT64);
  out.weekday = checked("weekday_id", weekday, DT_INT64);
  out.hour = checked("hour_id", hour, DT_INT64);
  return out;
}

}  // namespace

const std::string& SmDate::Part(DatePart part) const {
  switch (part) {
    case DatePart::kYear:
      return year;
    case DatePart::kMonth:
      return month;
    case DatePart::kDay:
      return day;
    case DatePart::kWeekday:
      return weekday;
    case DatePart::kHour:
      return hour;
    case DatePart::kEpochDays:
      break;
  }
  return epoch_days;
}

std::string SmBuilder::DateText(const std::string& sc, const DateFeature& f,
                                const std::string& n, const SmColumn& column) {
  NodeDef* count =
      g_.Add(StrCat(sc, "/values_per_row"), "UnsortedSegmentSum",
             {g_.Op(StrCat(sc, "/ones"), "OnesLike", {column.rows}, DT_INT64),
              column.rows, n});
  TfGraph::SetType(count, "T", DT_INT64);
  TfGraph::SetType(count, "Tindices", DT_INT64);
  TfGraph::SetType(count, "Tnumsegments", DT_INT64);
  NodeDef* join = g_.Add(StrCat(sc, "/text"), "UnsortedSegmentJoin",
                         {column.values, column.rows, n});
  TfGraph::SetString(join, "separator", " ");
  TfGraph::SetType(join, "Tindices", DT_INT64);
  TfGraph::SetType(join, "Tnumsegments", DT_INT64);
  const std::string one_value =
      g_.Op(StrCat(sc, "/one_value"), "LessEqual",
            {count->name(), g_.Int64(StrCat(sc, "/max_values"), 1)}, DT_INT64);
  const std::string check = AssertAll(StrCat(sc, "/values_check"), one_value,
                                      StrCat("date feature \"", f.name,
                                             "\": a record holds more than one "
                                             "value of \"",
                                             f.source, "\", expected 1:"),
                                      join->name());
  return g_.Op(StrCat(sc, "/row_text"), "Identity", {join->name(), "^" + check},
               DT_STRING);
}

std::string SmBuilder::DateOrDefault(const std::string& sc,
                                     const DateFeature& f, std::string text,
                                     std::vector<std::string>* checks) {
  NodeDef* empty = g_.Add(StrCat(sc, "/empty"), "Equal",
                          {text, g_.String(StrCat(sc, "/nothing"), "")});
  TfGraph::SetType(empty, "T", DT_STRING);
  TfGraph::SetBool(empty, "incompatible_shape_error", true);
  if (f.default_value) {
    return g_.Op(StrCat(sc, "/or_default"), "SelectV2",
                 {empty->name(),
                  g_.String(StrCat(sc, "/default"), *f.default_value), text},
                 DT_STRING);
  }
  checks->push_back(AssertAll(
      StrCat(sc, "/present_check"),
      g_.Add(StrCat(sc, "/present"), "LogicalNot", {empty->name()})->name(),
      StrCat("date feature \"", f.name, "\": a record has no \"", f.source,
             "\" (or an empty one) and the feature sets no default"),
      text));
  return text;
}

std::string SmBuilder::CanonicalDate(const std::string& sc,
                                     const DateFeature& f,
                                     const std::string& text,
                                     std::vector<std::string>* checks,
                                     std::string* matched) {
  // A value no form takes becomes a valid date, so that the steps after
  // read every row; the form check fails such a batch.
  std::string canonical = g_.String(StrCat(sc, "/no_form_taken"), "1970 1 1|");
  const std::vector<DateForm> forms = FormsOf(f.format);
  for (size_t i = forms.size(); i-- > 0;) {
    const std::string form_sc = StrCat(sc, "/form_", i);
    const std::string match =
        g_.Add(StrCat(form_sc, "/match"), "RegexFullMatch",
               {text, g_.String(StrCat(form_sc, "/pattern"), forms[i].pattern)})
            ->name();
    NodeDef* rewrite =
        g_.Add(StrCat(form_sc, "/rewrite"), "StaticRegexReplace", {text});
    TfGraph::SetString(rewrite, "pattern",
                       StrCat("^(?:", forms[i].pattern, ")$"));
    TfGraph::SetString(rewrite, "rewrite", forms[i].rewrite);
    TfGraph::SetBool(rewrite, "replace_global", false);
    canonical = g_.Op(StrCat(form_sc, "/select"), "SelectV2",
                      {match, rewrite->name(), canonical}, DT_STRING);
    *matched = matched->empty() ? match
                                : g_.Add(StrCat(form_sc, "/or"), "LogicalOr",
                                         {match, *matched})
                                      ->name();
  }
  const std::string form_name =
      f.format == DateFormat::kAuto
          ? std::string(
                "a date (known forms: 2024-03-05, "
                "2024-03-05T14:30:00Z, 20240305, 2024/03/05, "
                "03/05/2024, 05.03.2024)")
          : StrCat("a date in format \"", DateFormatName(f.format), "\"");
  checks->push_back(
      AssertAll(StrCat(sc, "/form_check"), *matched,
                StrCat("date feature \"", f.name, "\": column \"", f.source,
                       "\": a value is not ", form_name, ":"),
                text));
  return canonical;
}

StatusOr<SmDate> SmBuilder::DateParts(const std::string& scope, size_t feature,
                                      const std::string& n,
                                      const SmColumn& column) {
  const DateFeature& f = job_.features.date[feature];
  const std::string sc = StrCat(scope, "/date/", f.name);
  if (column.type != DT_STRING) {
    return InvalidArgumentError(StrCat("date feature \"", f.name,
                                       "\": column \"", f.source,
                                       "\" is not a str column"));
  }
  std::vector<std::string> checks;
  // An empty value is a missing date: the default's text, else an error.
  const std::string text =
      DateOrDefault(sc, f, DateText(sc, f, n, column), &checks);
  // The first form that takes each value, as "year month day|time", then
  // nine numbers a row.
  std::string matched;
  const DateFields v =
      DateFieldsOf(g_, sc, CanonicalDate(sc, f, text, &checks, &matched));

  DateMath math(g_, sc);
  const std::string valid = math.Valid(v);
  checks.push_back(AssertAll(
      StrCat(sc, "/date_check"),
      g_.Add(StrCat(sc, "/unmatched_or_valid"), "LogicalOr",
             {g_.Add(StrCat(sc, "/unmatched"), "LogicalNot", {matched})->name(),
              valid})
          ->name(),
      StrCat("date feature \"", f.name, "\": column \"", f.source,
             "\": a value is not a date that exists (month 1..12, a day of "
             "its month, hour 0..23, minute 0..59, second below 61):"),
      text));

  // The days since the epoch, the weekday, and the instant.
  const std::string days = math.DaysFromCivil(v);
  const std::string weekday =
      math.Op("weekday", "FloorMod",
              math.Op("days_3", "AddV2", days, math.Num(3)), math.Num(7));
  const std::string instant = math.Instant(v, days);
  return math.Parts(checks, v, weekday, instant);
}

}  // namespace dtf::runtime::saved_model_internal
