// How far the shards of a batch job have got, from their tasks' progress
// lines (kShardProgress), said at most once a second:
// "dtf: predict: N records scored (shard 0: a, shard 1: b)".
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/batch/shards.h"

namespace dtf::launch {

class ShardProgress {
 public:
  // `say` hears each line; `title` names the job in it ("predict") and
  // `done` what a shard does to a record ("scored").
  ShardProgress(std::function<void(std::string_view)> say, std::string title,
                std::string done, size_t tasks)
      : say_(std::move(say)),
        title_(std::move(title)),
        done_(std::move(done)),
        rows_(tasks, 0) {}

  // Whether `line` was a progress line (then it is taken, not shown).
  bool Take(size_t task, std::string_view line) {
    if (!line.starts_with(kShardProgress)) return false;
    const std::string_view n = line.substr(kShardProgress.size());
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
    say_(StrCat("dtf: ", title_, ": ", total, " records ", done_, " (", each,
                ")"));
  }

 private:
  std::function<void(std::string_view)> say_;
  std::string title_;
  std::string done_;
  std::vector<int64_t> rows_;
  // What the last line said: at first, nothing scored.
  std::vector<int64_t> shown_ = rows_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace dtf::launch
