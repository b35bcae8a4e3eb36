// Test jobs for the date and text feature kinds: a generated CSV whose
// label only the date (or only the text) column tells, and a job file over
// it, written into a temporary directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/date_parse.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime::testing {

// Reviews of 6 to 11 neutral words with one sentiment word (or "not" before
// a positive word, for a negative review) at a random place; label 1 for a
// positive review. `rows` rows; returns the job file's path. The model is
// wide_deep, or with `linear` a linear model (a bag of words).
inline std::string WriteReviewJob(const dtf::testing::TempDir& dir, int rows,
                                  bool linear = false) {
  static constexpr std::string_view kNeutral[] = {
      "the",    "movie",  "plot",  "actor", "scene",    "was",         "and",
      "a",      "film",   "story", "it",    "of",       "music",       "ending",
      "cast",   "to",     "with",  "this",  "director", "Caf\xC3\xA9", "night",
      "really", "script", "we",    "saw",   "two",      "hours"};
  static constexpr std::string_view kPositive[] = {
      "great", "excellent", "loved", "wonderful", "best", "good"};
  static constexpr std::string_view kNegative[] = {
      "awful", "terrible", "hated", "boring", "worst", "bad"};
  std::mt19937 rng(7);
  auto pick = [&](size_t n) {
    return static_cast<size_t>(
        std::uniform_int_distribution<int>(0, static_cast<int>(n) - 1)(rng));
  };
  std::string csv = "id,review,label\n";
  for (int i = 0; i < rows; ++i) {
    const bool positive = pick(2) == 1;
    std::vector<std::string> words;
    const size_t n = 6 + pick(6);
    for (size_t w = 0; w < n; ++w) words.emplace_back(kNeutral[pick(27)]);
    std::string sentiment;
    if (positive) {
      sentiment = kPositive[pick(6)];
    } else if (pick(4) == 0) {
      sentiment = StrCat("not ", kPositive[pick(6)]);
    } else {
      sentiment = kNegative[pick(6)];
    }
    if (pick(2) == 0) sentiment[0] = char(sentiment[0] - 'a' + 'A');
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(pick(n + 1)),
                 sentiment);
    std::string review;
    for (const std::string& w : words) {
      StrAppend(&review, review.empty() ? "" : pick(5) == 0 ? ", " : " ", w);
    }
    StrAppend(&csv, i, ",\"", review, "!\",", positive ? 1 : 0, "\n");
  }
  dtf::testing::WriteFile(dir.Join("reviews.csv"), csv);
  const std::string job = StrCat(
      R"([data]
csv = ["reviews.csv"]
split = { train = 0.8, eval = 0.2 }
records = "records"
shards = 2

[schema]
label = "label"
columns = ["id:int", "review:str", "label:int"]

[[features.text]]
name = "review"
buckets = 2000
)",
      linear ? "" : "embedding = 8\nwide = true\n",
      R"(
[model]
)",
      linear ? "type = \"linear\"\n" : "type = \"wide_deep\"\nhidden = [16]\n",
      R"(
[train]
batch_size = 32
epochs = 4
seed = 1
output_dir = "out"
)",
      linear ? R"(
[train.optimizer]
type = "ftrl"
learning_rate = 0.1
)"
             : R"(
[train.wide_optimizer]
type = "ftrl"
learning_rate = 0.1

[train.deep_optimizer]
type = "adam"
learning_rate = 0.01
)");
  const std::string path = dir.Join("dtf.toml");
  dtf::testing::WriteFile(path, job);
  return path;
}

// Timestamps from 2020 to 2023 at random hours; label 1 on weekends and in
// June, July and August. `rows` rows; returns the job file's path.
inline std::string WriteDateJob(const dtf::testing::TempDir& dir, int rows) {
  std::mt19937 rng(11);
  const int64_t first = DaysFromCivil(2020, 1, 1);
  const int64_t last = DaysFromCivil(2023, 12, 31);
  std::string csv = "when,amount,label\n";
  auto two = [](int64_t v) { return StrCat(v < 10 ? "0" : "", v); };
  for (int i = 0; i < rows; ++i) {
    const int64_t day =
        std::uniform_int_distribution<int64_t>(first, last)(rng);
    const int hour = std::uniform_int_distribution<int>(0, 23)(rng);
    // Civil date of `day` by search from the year's start (small range).
    int64_t year = 2020;
    while (DaysFromCivil(year + 1, 1, 1) <= day) ++year;
    int month = 1;
    while (month < 12 && DaysFromCivil(year, month + 1, 1) <= day) ++month;
    const int64_t dom = day - DaysFromCivil(year, month, 1) + 1;
    const int weekday = int(((day % 7) + 7 + 3) % 7);
    const bool label = weekday >= 5 || (month >= 6 && month <= 8);
    StrAppend(&csv, year, "-", two(month), "-", two(dom), "T", two(hour),
              ":30:00Z,", i % 10, ",", label ? 1 : 0, "\n");
  }
  dtf::testing::WriteFile(dir.Join("dates.csv"), csv);
  const std::string path = dir.Join("dtf.toml");
  dtf::testing::WriteFile(path, R"([data]
csv = ["dates.csv"]
split = { train = 0.8, eval = 0.2 }
records = "records"
shards = 2

[schema]
label = "label"
columns = ["when:str", "amount:float", "label:int"]

[[features.numeric]]
name = "amount"

[[features.date]]
name = "when"
embedding = 4
wide = true

[model]
type = "wide_deep"
hidden = [16]

[train]
batch_size = 32
epochs = 6
seed = 1
output_dir = "out"

[train.wide_optimizer]
type = "ftrl"
learning_rate = 0.1

[train.deep_optimizer]
type = "adam"
learning_rate = 0.01
)");
  return path;
}

}  // namespace dtf::runtime::testing
