// Content detectors for choosing a column's feature kind from a sample of
// its cells: dates and free text, which a schema types only as `str`.
//
// What `dtf init` should write for a column these pick (a `str` column in
// [schema]; the feature's name is the column's):
//   date (LooksLikeDate):
//     [[features.date]]
//     name = "<column>"
//     format = "<DateFormatName(*DetectDateColumn(sample))>"
//     parts = ["year", "month", "day", "weekday", "epoch_days"]
//                       # only when !DatesHaveTime(sample, format): an
//                       # hour that is always 0 teaches nothing
//     embedding = 4     # wide_deep and mlp models; leave out for linear
//     wide = true       # wide_deep: both parts; mlp: false; linear: default
//   text (LooksLikeText):
//     [[features.text]]
//     name = "<column>"
//     buckets = 10000   # hashed unigrams and bigrams
//     embedding = 16    # wide_deep and mlp models; leave out for linear
//     wide = true       # wide_deep: both parts; mlp: false; linear: default
// A column that is both (it cannot be: a date is one token or two) is a date.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "lib/data/date_parse.h"

namespace dtf {

// The date format under which at least 95% of `sample` parses (the format
// parsing the most; on a tie the first of iso8601, compact, ymd, mdy, dmy),
// or nullopt when none does or the sample is empty. `sample` holds the
// non-missing cells of one column.
std::optional<DateFormat> DetectDateColumn(
    const std::vector<std::string_view>& sample);

// DetectDateColumn(sample).has_value().
bool LooksLikeDate(const std::vector<std::string_view>& sample);

// Whether any cell of `sample` that parses in `format` has a time of day
// other than midnight.
bool DatesHaveTime(const std::vector<std::string_view>& sample,
                   DateFormat format);

// Free text: the cells hold on average at least 3 tokens (TextTokens) and at
// least half of them are distinct. False for an empty sample.
bool LooksLikeText(const std::vector<std::string_view>& sample);

}  // namespace dtf
