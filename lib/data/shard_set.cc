#include "lib/data/shard_set.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

#include "lib/base/strings.h"
#include "lib/data/shard_files.h"

namespace dtf {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kStagingPrefix = ".gen-records-";
constexpr std::string_view kStagingSuffix = ".tmp";
constexpr std::string_view kIndexSuffix = ".index";

Status FsError(const std::error_code& ec, std::string_view what) {
  return ErrnoToStatus(ec.value(), what);
}

// Staging directories of runs whose process is gone: a run killed outright
// cannot clean up after itself, so the next run in the directory does.
void RemoveStaleStaging(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(kStagingPrefix) || !name.ends_with(kStagingSuffix)) {
      continue;
    }
    // ".gen-records-<pid>-<n>.tmp" (or "...-<pid>.tmp" from older runs).
    std::string_view pid_text(name);
    pid_text.remove_prefix(kStagingPrefix.size());
    pid_text.remove_suffix(kStagingSuffix.size());
    pid_text = pid_text.substr(0, pid_text.find('-'));
    int pid = 0;
    auto [end, ec] = std::from_chars(pid_text.data(),
                                     pid_text.data() + pid_text.size(), pid);
    if (ec != std::errc() || end != pid_text.data() + pid_text.size() ||
        pid <= 0) {
      continue;
    }
    if (kill(pid, 0) == 0 || errno == EPERM) continue;
    std::error_code rm_ec;
    fs::remove_all(entry.path(), rm_ec);
  }
}

}  // namespace

StatusOr<std::unique_ptr<ShardSet>> ShardSet::Create(const Options& options) {
  if (options.shards < 1) {
    return InvalidArgumentError(
        StrCat("shards must be at least 1, got ", options.shards));
  }
  if (options.write_index && options.compression != Compression::kNone) {
    return InvalidArgumentError(
        "an index holds byte offsets into uncompressed files; use it with "
        "compression none");
  }
  if (options.parts < 1 || options.part < 0 || options.part >= options.parts) {
    return InvalidArgumentError(
        StrCat("part ", options.part, " of ", options.parts, ": out of range"));
  }
  std::unique_ptr<ShardSet> set(new ShardSet(options));
  set->shards_ = options.shards;
  DTF_RETURN_IF_ERROR(set->Open());
  return set;
}

Status ShardSet::Open() {
  const std::string& out = options_.out_dir;
  std::error_code ec;
  if (!fs::exists(out, ec)) {
    fs::path missing = fs::path(out).lexically_normal();
    if (!missing.has_filename()) missing = missing.parent_path();
    for (; !missing.empty() && !fs::exists(missing, ec);
         missing = missing.parent_path()) {
      created_dirs_.insert(created_dirs_.begin(), missing.string());
      if (missing == missing.parent_path()) break;
    }
    fs::create_directories(out, ec);
    if (ec) return FsError(ec, out);
    open_created_dirs_ = created_dirs_.size();
  } else if (!fs::is_directory(out, ec)) {
    return FailedPreconditionError(
        StrCat(out, ": exists and is not a directory"));
  }
  if (!options_.overwrite) {
    for (const std::string& split : options_.splits) {
      std::string dir = split.empty() ? out : StrCat(out, "/", split);
      std::vector<std::string> old = ExistingShardFiles(dir);
      if (!old.empty()) {
        return FailedPreconditionError(
            StrCat(dir, ": already holds shards (", old.front(),
                   "); pass --overwrite to replace them"));
      }
    }
  }
  RemoveStaleStaging(out);
  // Several sets of one process may share an output directory.
  for (int n = 0;; ++n) {
    std::string dir =
        StrCat(out, "/", kStagingPrefix, getpid(), "-", n, kStagingSuffix);
    if (fs::create_directory(dir, ec)) {
      staging_dir_ = std::move(dir);
      break;
    }
    if (ec) return FsError(ec, dir);
  }
  for (const std::string& split : options_.splits) {
    std::string stage =
        split.empty() ? staging_dir_ : StrCat(staging_dir_, "/", split);
    fs::create_directories(stage, ec);
    if (ec) return FsError(ec, stage);
    for (int shard = 0; shard < shards_; ++shard) {
      auto sink = std::make_unique<Sink>();
      std::string name = ShardFileName(shard, shards_, options_.compression);
      sink->split = split;
      sink->staged_path = StrCat(stage, "/", name);
      sink->final_path = split.empty() ? StrCat(out, "/", name)
                                       : StrCat(out, "/", split, "/", name);
      if (!Owns(static_cast<int>(sinks_.size()))) {
        sinks_.push_back(std::move(sink));
        continue;
      }
      RecordWriterOptions wo;
      wo.compression = options_.compression;
      DTF_ASSIGN_OR_RETURN(sink->writer,
                           RecordWriter::Open(sink->staged_path, wo));
      if (options_.write_index) {
        DTF_ASSIGN_OR_RETURN(
            sink->index,
            OpenWritableFile(StrCat(sink->staged_path, kIndexSuffix)));
      }
      sinks_.push_back(std::move(sink));
    }
  }
  return OkStatus();
}

ShardSet::~ShardSet() {
  Abort();
  for (auto& sink : sinks_) {
    sink->writer.reset();
    sink->index.reset();
  }
  std::error_code ec;
  if (!staging_dir_.empty()) fs::remove_all(staging_dir_, ec);
  if (published_) return;
  for (size_t i = created_dirs_.size(); i-- > 0;) {
    fs::remove(created_dirs_[i], ec);  // only if empty
  }
}

StatusOr<bool> ShardSet::Append(int index, int64_t seq,
                                const ShardBatch& batch) {
  Sink& sink = *sinks_[index];
  if (!sink.writer) return !aborted_.load();
  std::unique_lock<std::mutex> lock(sink.mu);
  sink.cv.wait(lock, [&] { return sink.next_seq == seq || aborted_; });
  if (aborted_) return false;
  if (!batch.lengths.empty()) {
    if (sink.index) {
      sink.index_text.clear();
      uint64_t offset = sink.writer->offset();
      for (uint32_t len : batch.lengths) {
        StrAppend(&sink.index_text, offset, " ", len, "\n");
        offset += len;
      }
      DTF_RETURN_IF_ERROR(sink.index->Append(sink.index_text));
    }
    DTF_RETURN_IF_ERROR(
        sink.writer->WriteFramed(batch.framed, batch.lengths.size()));
  }
  ++sink.next_seq;
  lock.unlock();
  sink.cv.notify_all();
  return true;
}

void ShardSet::Abort() {
  aborted_ = true;
  for (auto& sink : sinks_) {
    // Taking the lock orders the flag before any waiter's next check.
    std::lock_guard<std::mutex> lock(sink->mu);
    sink->cv.notify_all();
  }
}

Status ShardSet::Commit() {
  DTF_RETURN_IF_ERROR(Finish());
  return Publish();
}

Status ShardSet::Finish() {
  files_.clear();
  for (auto& sink : sinks_) {
    if (!sink->writer) continue;
    FileInfo info{sink->split, sink->final_path,
                  static_cast<int64_t>(sink->writer->records()), 0};
    DTF_RETURN_IF_ERROR(sink->writer->Close());
    if (sink->index) DTF_RETURN_IF_ERROR(sink->index->Close());
    std::error_code ec;
    info.bytes = fs::file_size(sink->staged_path, ec);
    files_.push_back(std::move(info));
  }
  return OkStatus();
}

Status ShardSet::MoveFile(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) return FsError(ec, to);
  moves_.push_back({from, to});
  return OkStatus();
}

Status ShardSet::Publish() {
  moves_.clear();
  created_dirs_.resize(open_created_dirs_);
  auto publish = [&]() -> Status {
    std::error_code ec;
    for (const std::string& split : options_.splits) {
      const std::string dir = split.empty()
                                  ? options_.out_dir
                                  : StrCat(options_.out_dir, "/", split);
      if (!fs::exists(dir, ec)) {
        fs::create_directory(dir, ec);
        if (ec) return FsError(ec, dir);
        created_dirs_.push_back(dir);
      }
      if (!options_.overwrite) continue;
      const std::string stage =
          split.empty() ? staging_dir_ : StrCat(staging_dir_, "/", split);
      for (const std::string& old : ExistingShardFiles(dir)) {
        DTF_RETURN_IF_ERROR(
            MoveFile(old, StrCat(stage, "/", fs::path(old).filename().string(),
                                 ".replaced")));
      }
    }
    for (auto& sink : sinks_) {
      if (!sink->writer) continue;
      DTF_RETURN_IF_ERROR(MoveFile(sink->staged_path, sink->final_path));
      if (sink->index) {
        DTF_RETURN_IF_ERROR(MoveFile(StrCat(sink->staged_path, kIndexSuffix),
                                     StrCat(sink->final_path, kIndexSuffix)));
      }
    }
    return OkStatus();
  };
  Status status = publish();
  if (!status.ok()) {
    Unpublish();
    return status;
  }
  published_ = true;
  return OkStatus();
}

void ShardSet::Unpublish() {
  std::error_code ec;
  for (size_t i = moves_.size(); i-- > 0;) {
    fs::rename(moves_[i].to, moves_[i].from, ec);
  }
  moves_.clear();
  for (size_t i = created_dirs_.size(); i-- > open_created_dirs_;) {
    fs::remove(created_dirs_[i], ec);
  }
  created_dirs_.resize(open_created_dirs_);
  published_ = false;
}

}  // namespace dtf
