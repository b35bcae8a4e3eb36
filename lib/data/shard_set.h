// The output files of one gen-records run: for each split, `shards` TFRecord
// files (and their index files), written under a staging directory inside the
// output directory and moved into place by Commit() (or Finish() and
// Publish(), which let several sets go into place all or none) only. Internal
// to lib/data.
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
    // Write only the sinks (split * shards + shard) whose index % parts ==
    // part: one part of a conversion spread over several processes, each
    // writing its own shards whole (gen_records.h). Default: all of them.
    int part = 0;
    int parts = 1;
  };

  // Checks the output directories (existing shards need `overwrite`),
  // creates the staging directory and opens every file.
  static StatusOr<std::unique_ptr<ShardSet>> Create(const Options& options);
  // Removes the staging directory. Unless the files were published, also
  // removes the directories Create made (the output directory and its
  // missing parents), when empty.
  ~ShardSet();

  int size() const { return static_cast<int>(sinks_.size()); }
  // Whether sink `sink` is written (Options::part); Append to another is a
  // no-op.
  bool Owns(int sink) const { return sink % options_.parts == options_.part; }
  int Index(int split, int shard) const { return split * shards_ + shard; }

  // Appends the batch of chunk `seq` to sink `sink`. Chunks are written in
  // sequence order: this blocks until chunk seq-1 has been appended to this
  // sink (every chunk must be appended to every sink, empty or not). Returns
  // false without writing once Abort() was called. Thread-safe.
  StatusOr<bool> Append(int sink, int64_t seq, const ShardBatch& batch);
  // Wakes every waiting Append; later Appends return false at once.
  void Abort();

  // Finish() then Publish().
  Status Commit();
  // Closes the files; files() then describes them. Nothing is in place yet.
  Status Finish();
  // REQUIRES: Finish() succeeded. Renames the files into place. Older
  // shards are replaced when `overwrite`: they move into the staging
  // directory, deleted with it. On failure the renames made are undone, so
  // the output directories are as they were.
  Status Publish();
  // REQUIRES: Publish() succeeded. Undoes it: the new files go back to the
  // staging directory and older shards back into place (best effort; every
  // step is a rename within one directory tree).
  void Unpublish();

  struct FileInfo {
    std::string split;
    std::string path;
    int64_t records = 0;
    uint64_t bytes = 0;
  };
  // After Commit(): one entry per shard file written.
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

  struct Move {
    std::string from;
    std::string to;
  };

  explicit ShardSet(const Options& options) : options_(options) {}
  Status Open();
  // Renames from -> to and records the move for Unpublish().
  Status MoveFile(const std::string& from, const std::string& to);

  Options options_;
  int shards_ = 1;
  std::string staging_dir_;
  // Directories made by Open() (the output directory and its missing
  // parents) and by Publish() (split directories), deepest last.
  std::vector<std::string> created_dirs_;
  size_t open_created_dirs_ = 0;  // how many of them Open() made
  std::vector<Move> moves_;       // Publish()'s renames, in order
  bool published_ = false;
  std::atomic<bool> aborted_{false};
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::vector<FileInfo> files_;
};

}  // namespace dtf
