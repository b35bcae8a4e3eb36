#include "lib/data/shard_parts.h"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "lib/base/strings.h"
#include "lib/data/shard_files.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

std::string SplitDir(const std::string& dir, const std::string& split) {
  return split.empty() ? dir : StrCat(dir, "/", split);
}

// Renames `from` to `to`, or copies and removes it across file systems.
Status MoveOne(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec == std::errc::cross_device_link) {
    ec.clear();
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::remove(from, ec);
  }
  if (ec) return ErrnoToStatus(ec.value(), StrCat("moving ", from, " to ", to));
  return OkStatus();
}

// The moves made, undone in reverse on failure, and the directories made.
class Mover {
 public:
  ~Mover() {
    if (done_) return;
    for (size_t i = moves_.size(); i-- > 0;) {
      (void)MoveOne(moves_[i].second, moves_[i].first);
    }
    std::error_code ec;
    for (size_t i = made_.size(); i-- > 0;) fs::remove(made_[i], ec);
  }

  Status Dir(const std::string& dir) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return OkStatus();
    fs::path missing = fs::path(dir).lexically_normal();
    std::vector<std::string> made;
    for (; !missing.empty() && !fs::exists(missing, ec);
         missing = missing.parent_path()) {
      made.insert(made.begin(), missing.string());
      if (missing == missing.parent_path()) break;
    }
    fs::create_directories(dir, ec);
    if (ec) return ErrnoToStatus(ec.value(), dir);
    made_.insert(made_.end(), made.begin(), made.end());
    return OkStatus();
  }

  Status Move(const std::string& from, const std::string& to) {
    DTF_RETURN_IF_ERROR(MoveOne(from, to));
    moves_.emplace_back(from, to);
    return OkStatus();
  }

  void Done() { done_ = true; }

 private:
  std::vector<std::pair<std::string, std::string>> moves_;
  std::vector<std::string> made_;
  bool done_ = false;
};

}  // namespace

Status CheckShardPartsOutput(const std::vector<ShardPartsRun>& runs,
                             bool overwrite) {
  if (overwrite) return OkStatus();
  for (const ShardPartsRun& run : runs) {
    for (const std::string& split : run.splits) {
      const std::string dir = SplitDir(run.out_dir, split);
      const std::vector<std::string> old = ExistingShardFiles(dir);
      if (!old.empty()) {
        return FailedPreconditionError(
            StrCat(dir, ": already holds shards (", old.front(),
                   "); pass --overwrite to replace them"));
      }
    }
  }
  return OkStatus();
}

Status PublishShardParts(const std::vector<ShardPartsRun>& runs,
                         bool overwrite) {
  DTF_RETURN_IF_ERROR(CheckShardPartsOutput(runs, overwrite));
  Mover mover;
  // Older shards wait here until every new one is in place.
  std::vector<std::string> replaced_dirs;
  for (size_t r = 0; r < runs.size(); ++r) {
    const ShardPartsRun& run = runs[r];
    for (const std::string& split : run.splits) {
      const std::string dir = SplitDir(run.out_dir, split);
      DTF_RETURN_IF_ERROR(mover.Dir(dir));
      const std::vector<std::string> old = ExistingShardFiles(dir);
      if (!old.empty()) {
        const std::string aside =
            StrCat(dir, "/.gen-records-", ::getpid(), "-replaced-", r, ".tmp");
        DTF_RETURN_IF_ERROR(mover.Dir(aside));
        replaced_dirs.push_back(aside);
        for (const std::string& file : old) {
          DTF_RETURN_IF_ERROR(mover.Move(
              file, StrCat(aside, "/", fs::path(file).filename().string())));
        }
      }
      std::set<std::string> placed;
      for (const std::string& part : run.part_dirs) {
        for (const std::string& file :
             ExistingShardFiles(SplitDir(part, split))) {
          const std::string name = fs::path(file).filename().string();
          if (!placed.insert(name).second) {
            return DataLossError(StrCat(file, ": another part wrote ", name,
                                        " for ", dir, " too"));
          }
          DTF_RETURN_IF_ERROR(mover.Move(file, StrCat(dir, "/", name)));
        }
      }
    }
  }
  mover.Done();
  std::error_code ec;
  for (const std::string& dir : replaced_dirs) fs::remove_all(dir, ec);
  return OkStatus();
}

}  // namespace dtf
