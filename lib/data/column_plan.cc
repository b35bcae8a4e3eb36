#include "lib/data/column_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "lib/base/strings.h"
#include "lib/data/column_kind.h"

namespace dtf {
namespace {

char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

std::string LowerText(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

bool EndsWith(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// "id", "user_id", "user id", "userId", "userID", "uuid", "guid": a name
// that says it holds identifiers ("paid" and "VALID" do not).
bool NameSaysId(std::string_view name) {
  const std::string lower = LowerText(name);
  if (lower == "id" || EndsWith(lower, "uuid") || EndsWith(lower, "guid")) {
    return true;
  }
  if (name.size() < 3 || !EndsWith(lower, "id")) return false;
  const char before = name[name.size() - 3];
  const char i = name[name.size() - 2];
  const char d = name[name.size() - 1];
  if (before == '_' || before == '-' || before == ' ' || before == '.') {
    return true;
  }
  // camelCase: "userId", "userID", "PassengerId"; not "SKUID".
  return i == 'I' && !IsUpper(before) && (d == 'd' || d == 'D');
}

// Every counted value is a true/false spelling that format "bool" reads.
bool AllBoolSpellings(const ColumnProfile& c) {
  if (c.counts_capped || c.counts.empty()) return false;
  for (const auto& [value, count] : c.counts) {
    if (!ParseFormattedValue(value, ValueType::kInt, ColumnFormat::kBool)
             .ok()) {
      return false;
    }
  }
  return true;
}

void TakeStats(const NumericStats& s, ColumnPlan* p) {
  p->mean = s.mean();
  p->min = s.min;
  p->max = s.max;
  p->deciles.clear();
  for (int q = 1; q < 10; ++q) p->deciles.push_back(s.Quantile(q / 10.0));
}

// Step 1: the type and format the cells read as, and their numbers.
void ChooseReading(const ColumnProfile& c, ColumnPlan* p) {
  p->type = ValueType::kString;
  if (c.values == 0) return;
  if (c.plain.ok && c.plain.all_int) {
    p->type = ValueType::kInt;
    TakeStats(c.plain, p);
  } else if (AllBoolSpellings(c)) {
    p->type = ValueType::kInt;
    p->format = ColumnFormat::kBool;
    int64_t yes = 0;
    for (const auto& [value, count] : c.counts) {
      if (std::get<int64_t>(*ParseFormattedValue(value, ValueType::kInt,
                                                 ColumnFormat::kBool)) == 1) {
        yes += count;
      }
    }
    p->mean = static_cast<double>(yes) / static_cast<double>(c.values);
    p->min = 0;
    p->max = 1;
    std::map<std::string, int64_t> sorted(c.counts.begin(), c.counts.end());
    std::string spellings;
    for (const auto& [value, count] : sorted) {
      StrAppend(&spellings, spellings.empty() ? "" : ", ", value);
    }
    p->note = StrCat("true/false spellings (", spellings, ") read as 1/0");
  } else if (c.plain.ok) {
    p->type = ValueType::kFloat;
    TakeStats(c.plain, p);
  } else if (c.comma.ok && !c.first_comma.empty() &&
             (c.comma_not_grouping || !c.Number().ok)) {
    // "1,500" reads both ways; only a comma that cannot group thousands
    // ("3,14") makes it a decimal one.
    p->type = c.comma.all_int ? ValueType::kInt : ValueType::kFloat;
    p->format = ColumnFormat::kDecimalComma;
    TakeStats(c.comma, p);
    StatusOr<Value> v = ParseFormattedValue(c.first_comma, p->type, p->format);
    p->note = StrCat("decimal comma: read \"", c.first_comma, "\" as ",
                     v.ok() ? ValueToString(*v) : "a number");
  } else if (c.Number().ok && !c.first_decorated.empty()) {
    p->type = c.Number().all_int ? ValueType::kInt : ValueType::kFloat;
    p->format = ColumnFormat::kNumber;
    TakeStats(c.Number(), p);
    StatusOr<Value> v =
        ParseFormattedValue(c.first_decorated, p->type, p->format);
    p->note = StrCat("read \"", c.first_decorated, "\" as ",
                     v.ok() ? ValueToString(*v) : "a number",
                     " (currency, groups and % signs dropped)");
  }
  if (p->type != ValueType::kString) {
    for (const auto& [spelling, count] : c.na_counts) {
      p->na_missing.push_back(spelling);
    }
    if (!p->na_missing.empty()) {
      std::string list;
      for (const std::string& s : p->na_missing) {
        StrAppend(&list, list.empty() ? "" : ", ", s);
      }
      StrAppend(&p->note, p->note.empty() ? "" : "; ", list,
                " read as missing");
    }
  }
}

// Step 4: why the column holds identifiers, or "" when it does not. Floats
// are measurements, never identifiers; too few values tell nothing.
std::string IdentifierReason(const ColumnProfile& c, const ColumnPlan& p) {
  constexpr int64_t kMinValues = 20;
  if (c.values < kMinValues || p.format == ColumnFormat::kBool ||
      p.type == ValueType::kFloat) {
    return "";
  }
  const double ratio = c.distinct_ratio();
  const std::string percent = StrCat(std::llround(std::min(ratio, 1.0) * 100));
  if (NameSaysId(c.name) && ratio >= 0.5) {
    return StrCat("identifier: named like one, ", percent,
                  "% of values distinct");
  }
  if (p.type == ValueType::kString && c.uuid_like && ratio >= 0.5) {
    return StrCat("identifier: UUID-like values, ", percent, "% distinct");
  }
  if (p.type == ValueType::kInt && p.format == ColumnFormat::kPlain) {
    if (c.increasing && ratio >= 0.95) {
      return "identifier: increasing integers, all distinct";
    }
    // Row numbers in any order: distinct ints filling their range.
    if (ratio >= 0.999 &&
        p.max - p.min + 1 <= 2 * static_cast<double>(c.values)) {
      return "identifier: distinct integers filling their range";
    }
    return "";
  }
  if (p.type == ValueType::kString && ratio >= 0.95) {
    return StrCat("identifier or free text: ", percent, "% of values distinct");
  }
  return "";
}

// Makes `p` a date or text feature when the sampled cells are dates (every
// one of them, in one form, and no plain number before them) or free text;
// false otherwise.
bool PlanDateOrText(const ColumnProfile& c, ColumnPlan* p) {
  std::vector<std::string_view> sample(c.sample_cells.begin(),
                                       c.sample_cells.end());
  if (sample.empty()) return false;
  std::optional<DateFormat> format;
  if (c.unsampled == 0) format = DetectDateColumn(sample);
  if (format) {
    // One more parse of each cell: all must read, and any time of day other
    // than midnight keeps the hour.
    bool all = true;
    bool has_time = false;
    for (std::string_view s : sample) {
      StatusOr<DateTime> t = ParseDate(s, *format);
      if (!t.ok()) {
        all = false;
        break;
      }
      has_time |= t->hour != 0 || t->minute != 0 || t->second != 0;
    }
    if (all) {
      p->kind = PlannedFeature::kDate;
      p->date_format = *format;
      p->date_has_time = has_time;
      p->date_default = std::string(sample.front());
      return true;
    }
  }
  if (LooksLikeText(sample)) {
    p->kind = PlannedFeature::kText;
    return true;
  }
  return false;
}

}  // namespace

std::string_view PlannedFeatureName(PlannedFeature kind) {
  switch (kind) {
    case PlannedFeature::kNone:
      return "none";
    case PlannedFeature::kNumeric:
      return "numeric";
    case PlannedFeature::kCategorical:
      return "categorical";
    case PlannedFeature::kHashed:
      return "hashed";
    case PlannedFeature::kDate:
      return "date";
    case PlannedFeature::kText:
      return "text";
  }
  return "none";
}

bool ReadsAs(const ColumnProfile& c, ColumnFormat format) {
  if (c.values == 0) return true;
  switch (format) {
    case ColumnFormat::kPlain:
      return c.plain.ok;
    case ColumnFormat::kNumber:
      return c.Number().ok;
    case ColumnFormat::kDecimalComma:
      return c.comma.ok;
    case ColumnFormat::kBool:
      return AllBoolSpellings(c);
  }
  return false;
}

bool ReadsAsInt(const ColumnProfile& c, ColumnFormat format) {
  switch (format) {
    case ColumnFormat::kPlain:
      return c.plain.all_int;
    case ColumnFormat::kNumber:
      return c.Number().all_int;
    case ColumnFormat::kDecimalComma:
      return c.comma.all_int;
    case ColumnFormat::kBool:
      return true;
  }
  return false;
}

ColumnPlan PlanColumn(const ColumnProfile& c, const PlanOptions& options) {
  ColumnPlan p;
  p.name = c.name;
  ChooseReading(c, &p);
  // Step 2: the label feeds no feature; a column without values has nothing
  // to give.
  if (c.name == options.label) {
    p.why = "label";
    return p;
  }
  if (c.values == 0) {
    p.why = "no values";
    return p;
  }
  // Step 3: text cells that are dates, or free text (before identifiers:
  // timestamps and reviews are nearly all distinct too). UUIDs and columns
  // named as identifiers ("ORD-2024-0001" is three tokens) are neither.
  if (p.type == ValueType::kString && !c.uuid_like && !NameSaysId(c.name) &&
      PlanDateOrText(c, &p)) {
    return p;
  }
  if (std::string why = IdentifierReason(c, p); !why.empty()) {
    p.why = std::move(why);
    return p;
  }
  // Step 5: numbers are normalized (and bucketized when they take many
  // values); strings get a vocabulary or are hashed.
  if (p.type != ValueType::kString) {
    p.kind = PlannedFeature::kNumeric;
    p.bucketize =
        p.format != ColumnFormat::kBool && c.distinct > kBucketizeAbove;
  } else if (c.distinct <= kMaxVocabulary && !c.counts_capped) {
    p.kind = PlannedFeature::kCategorical;
  } else {
    p.kind = PlannedFeature::kHashed;
  }
  return p;
}

}  // namespace dtf
