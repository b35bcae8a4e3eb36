#include "lib/runtime/train/job_records.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "lib/base/storage.h"
#include "lib/base/strings.h"

namespace dtf::runtime {
namespace fs = std::filesystem;

StatusOr<std::vector<std::string>> ListShardsAnywhere(const std::string& dir) {
  if (!IsRemotePath(dir)) return ListShards(dir);
  std::vector<std::string> found;
  DTF_ASSIGN_OR_RETURN(std::vector<FileInfo> files,
                       ListFiles(JoinPath(dir, "part-*.tfrecord*")));
  for (const FileInfo& f : files) {
    if (!f.path.ends_with(".index")) found.push_back(f.path);
  }
  return found;
}

std::vector<std::string> ListShards(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("part-") &&
        name.find(".tfrecord") != std::string::npos &&
        !name.ends_with(".index") && entry.is_regular_file(ec)) {
      found.push_back(entry.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

StatusOr<JobRecords> FindJobRecords(const JobFile& job) {
  std::vector<std::string> splits;
  for (const SplitFraction& s : job.data.split) splits.push_back(s.name);
  for (const CsvSource& s : job.data.csv) {
    if (!s.split.empty() &&
        std::find(splits.begin(), splits.end(), s.split) == splits.end()) {
      splits.push_back(s.split);
    }
  }
  JobRecords records;
  auto has = [&](std::string_view name) {
    return std::find(splits.begin(), splits.end(), name) != splits.end();
  };
  if (!splits.empty()) {
    records.train_split = has("train") ? "train" : splits[0];
    for (std::string_view name : {"eval", "test", "validation", "valid"}) {
      if (records.eval_split.empty() && has(name)) records.eval_split = name;
    }
    if (records.eval_split.empty()) {
      for (const std::string& s : splits) {
        if (records.eval_split.empty() && s != records.train_split) {
          records.eval_split = s;
        }
      }
    }
  }
  auto dir_of = [&](const std::string& split) {
    return split.empty() ? job.data.records_dir
                         : (fs::path(job.data.records_dir) / split).string();
  };
  auto missing = [&](const std::string& dir) {
    return NotFoundError(StrCat("no TFRecord shards in ", dir,
                                "; write them with `dtf gen-records --job ",
                                job.path, "`"));
  };
  records.train_dir = dir_of(records.train_split);
  DTF_ASSIGN_OR_RETURN(records.train, ListShardsAnywhere(records.train_dir));
  if (records.train.empty()) return missing(records.train_dir);
  if (!records.eval_split.empty()) {
    records.eval_dir = dir_of(records.eval_split);
    DTF_ASSIGN_OR_RETURN(records.eval, ListShardsAnywhere(records.eval_dir));
    if (records.eval.empty()) return missing(records.eval_dir);
  }
  return records;
}

InputCacheOptions TrainInputCache(const TrainSpec& train, int parse_threads) {
  InputCacheOptions cache;
  cache.enabled = train.input_cache;
  cache.memory_budget_bytes = train.input_cache_memory_mb << 20;
  cache.spill_dir = train.input_cache_dir;
  cache.parse_threads = std::max(1, parse_threads);
  return cache;
}

std::string InputCacheNote(const InputCacheStats& stats) {
  if (!stats.active) return "";
  // MiB to one decimal.
  const auto mib = [](int64_t bytes) {
    return FormatDouble(std::round(bytes * 10.0 / (1 << 20)) / 10);
  };
  std::string note =
      StrCat("input cache: ", stats.rows, " rows of ", stats.files, " files, ",
             mib(stats.memory_bytes), " MiB in memory");
  if (stats.disk_bytes > 0) {
    StrAppend(&note, ", ", mib(stats.disk_bytes), " MiB in ", stats.spill_path);
  }
  return note;
}

}  // namespace dtf::runtime
