// The output files of one gen-records run: for each split, `shards` TFRecord
// files (and their index files), written under a staging directory inside the
// output directory and moved into place by Commit() only. Internal to
// lib/data.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/compression.h"
#include "lib/data/record_writer.h"

namespace dtf {

// Framed records bound for one shard from one chunk.
struct ShardBatch {
  std::string framed;
  std::vector<uint32_t> lengths;  // framed length of each record
  void Clear() {
    framed.clear();
    lengths.clear();
  }
};

class ShardSet {
 public:
  struct Options {
    std::string out_dir;
    std::vector<std::string> splits;  // {""} without splits
    int shards = 1;
    Compression compression = Compression::kNone;
    bool write_index = false;
    bool overwrite = false;
  };

  // Checks the output directories (existing shards need `overwrite`),
  // creates the staging directory and opens every file.
  static StatusOr<std::unique_ptr<ShardSet>> Create(const Options& options);
  // Removes the staging directory (and the output directory when Create
  // made it) unless Commit() succeeded.
  ~ShardSet();

  int size() const { return static_cast<int>(sinks_.size()); }
  int Index(int split, int shard) const { return split * shards_ + shard; }

  // Appends the batch of chunk `seq` to sink `sink`. Chunks are written in
  // sequence order: this blocks until chunk seq-1 has been appended to this
  // sink (every chunk must be appended to every sink, empty or not). Returns
  // false without writing once Abort() was called. Thread-safe.
  StatusOr<bool> Append(int sink, int64_t seq, const ShardBatch& batch);
  // Wakes every waiting Append; later Appends return false at once.
  void Abort();

  // Closes the files and renames them into place, replacing older shards
  // when `overwrite`.
  Status Commit();

  struct FileInfo {
    std::string split;
    std::string path;
    int64_t records = 0;
    uint64_t bytes = 0;
  };
  // After Commit(): one entry per shard file.
  const std::vector<FileInfo>& files() const { return files_; }

 private:
  struct Sink {
    std::mutex mu;
    std::condition_variable cv;
    int64_t next_seq = 0;
    std::unique_ptr<RecordWriter> writer;
    std::unique_ptr<WritableFile> index;
    std::string index_text;
    std::string split;
    std::string staged_path;
    std::string final_path;
  };

  explicit ShardSet(const Options& options) : options_(options) {}
  Status Open();

  Options options_;
  int shards_ = 1;
  std::string staging_dir_;
  bool created_out_dir_ = false;
  bool committed_ = false;
  std::atomic<bool> aborted_{false};
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::vector<FileInfo> files_;
};

// Names of shard files (and their index files) already in `dir`.
std::vector<std::string> ExistingShardFiles(const std::string& dir);

}  // namespace dtf
