#include "lib/launch/pack/job_data.h"

#include <algorithm>
#include <filesystem>

#include "lib/base/strings.h"
#include "lib/base/toml_util.h"
#include "lib/data/job_file.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRecordsKey = "data.records=";

// [data] records as written (in the file or by the last override that sets
// it); "records" when neither does.
StatusOr<std::string> RecordsSetting(
    const std::string& job_path, const std::vector<std::string>& overrides) {
  std::string setting = "records";
  DTF_ASSIGN_OR_RETURN(const toml::table root, toml_util::ParseFile(job_path));
  if (const toml::node* n = root.at_path("data.records").node()) {
    if (const auto* s = n->as_string()) setting = s->get();
  }
  for (const std::string& o : overrides) {
    if (!o.starts_with(kRecordsKey)) continue;
    const std::string value = o.substr(kRecordsKey.size());
    setting = value;
    StatusOr<toml::table> parsed =
        toml_util::ParseText(StrCat("v = ", value), "--set");
    if (parsed.ok()) {
      if (const auto* s =
              parsed->get("v") ? parsed->get("v")->as_string() : nullptr) {
        setting = s->get();
      }
    }
  }
  return setting;
}

}  // namespace

StatusOr<std::vector<RecordDir>> JobRecordDirs(
    const std::string& job_path, const std::vector<std::string>& overrides) {
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadJobFile(job_path, overrides));
  // Records in an object store are read there by every task: nothing to
  // ship or to look for on the hosts.
  if (job.data.records_dir.starts_with("s3://"))
    return std::vector<RecordDir>{};
  DTF_ASSIGN_OR_RETURN(const std::string setting,
                       RecordsSetting(job_path, overrides));
  RecordDir base;
  base.relative = !fs::path(setting).is_absolute();
  base.path =
      base.relative
          ? fs::path(job.data.records_dir).lexically_relative(job.dir).string()
          : job.data.records_dir;
  std::vector<std::string> splits;
  for (const SplitFraction& s : job.data.split) splits.push_back(s.name);
  for (const CsvSource& s : job.data.csv) {
    if (!s.split.empty() &&
        std::find(splits.begin(), splits.end(), s.split) == splits.end()) {
      splits.push_back(s.split);
    }
  }
  if (splits.empty()) return std::vector<RecordDir>{base};
  std::vector<RecordDir> dirs;
  for (const std::string& split : splits) {
    dirs.push_back({(fs::path(base.path) / split).string(), base.relative});
  }
  return dirs;
}

}  // namespace dtf::pack
