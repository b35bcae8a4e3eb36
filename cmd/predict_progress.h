// How far the tasks of `dtf predict --profile` have scored, from their
// progress lines (kPredictProgress), shown on the console at most once a
// second: "dtf: predict: N records scored (shard 0: a, shard 1: b)".
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/cli_output.h"
#include "cmd/predict_shards.h"
#include "lib/base/strings.h"

namespace dtf::cli {

class ShardProgress {
 public:
  ShardProgress(const Console& console, size_t tasks)
      : console_(console), rows_(tasks, 0) {}

  // Whether `line` was a progress line (then it is taken, not shown).
  bool Take(size_t task, std::string_view line) {
    if (!line.starts_with(kPredictProgress)) return false;
    const std::string_view n = line.substr(kPredictProgress.size());
    int64_t rows = 0;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), rows);
    if (ec != std::errc() || task >= rows_.size()) return false;
    rows_[task] = rows;
    Show(false);
    return true;
  }

  // Shard `task` has scored `rows` (its last word).
  void Set(size_t task, int64_t rows) {
    if (task < rows_.size()) rows_[task] = rows;
  }

  // The line; not forced, only when it says something new and none was
  // shown within the second.
  void Show(bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (!force && (now - last_ < std::chrono::seconds(1) || rows_ == shown_)) {
      return;
    }
    last_ = now;
    shown_ = rows_;
    int64_t total = 0;
    std::string each;
    for (size_t k = 0; k < rows_.size(); ++k) {
      total += rows_[k];
      StrAppend(&each, k ? ", " : "", "shard ", k, ": ", rows_[k]);
    }
    console_.Info(
        StrCat("dtf: predict: ", total, " records scored (", each, ")"));
  }

 private:
  const Console& console_;
  std::vector<int64_t> rows_;
  // What the last line said: at first, nothing scored.
  std::vector<int64_t> shown_ = rows_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace dtf::cli
