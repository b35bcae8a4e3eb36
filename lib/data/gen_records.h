// gen-records: CSV inputs -> sharded TFRecord files of tf.train.Example.
//
// Inputs are cut into chunks on record boundaries and encoded on `threads`
// threads; each output shard receives its rows in input order, so the output
// is the same bytes whatever the thread count. Rows go to shards round robin
// by data-row index (row i -> shard i % shards) or by the hash of a key
// column; with splits, each row's split is chosen by the hash of its fields.
// Files are written under a staging directory and renamed into place only
// when the whole run succeeded: a failed or cancelled run leaves no output.
// StagedRecords extends this to several runs (a job's train and eval
// sources): all of them go into place, or none.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/compression.h"
#include "lib/data/csv_reader.h"
#include "lib/data/job_file.h"
#include "lib/data/schema.h"
#include "lib/data/shard_files.h"

namespace dtf {

struct GenRecordsProgress {
  uint64_t bytes_read = 0;
  // Sum of the inputs' sizes; 0 when unknown (standard input).
  uint64_t bytes_total = 0;
  int64_t rows = 0;
};

enum class OnError { kFail, kSkip };

struct GenRecordsOptions {
  // CSV files or glob patterns, read in order; "-" is standard input.
  std::vector<std::string> inputs;
  CsvOptions csv;
  // Whether each input starts with a header line. Default: true.
  bool header = true;
  // The schema. When absent, one is inferred (see `infer_rows`).
  std::optional<Schema> schema;
  // With an inferred schema: rows read to infer it (0: all of the first
  // input, held in memory), and the label column to mark.
  int64_t infer_rows = 100000;
  std::string infer_label;
  // With an inferred schema: cell texts meaning "missing" besides "".
  std::vector<std::string> infer_missing;
  // Output directory; with splits, one subdirectory per split.
  std::string out_dir;
  // Shards per split. Default: 1.
  int shards = 1;
  // Column whose hash picks the shard; empty: round robin.
  std::string shard_key;
  // Hash split of the rows; empty: no split subdirectories.
  std::vector<SplitFraction> splits;
  Compression compression = Compression::kNone;
  // Encoding threads. Default: 1 (everything on the calling thread).
  int threads = 1;
  // Write "<shard>.index" beside each shard. Requires no compression.
  bool write_index = false;
  OnError on_error = OnError::kFail;
  // One part of a conversion spread over `parts` processes: every process
  // reads every input, and this one writes only the shard files whose
  // number (split index * shards + shard) % parts == part, each whole and
  // byte for byte as a run of one process writes it; rows bound for
  // another part are not encoded, and the counts of the result are this
  // part's. Default: 0 of 1 (every shard). A local output only.
  int part = 0;
  int parts = 1;
  // Replace shard files already in the output directories. Default: false,
  // and existing shards make the run fail before it reads anything.
  bool overwrite = false;
  // Called on the calling thread after each chunk. May be empty.
  std::function<void(const GenRecordsProgress&)> progress;
  // Set to true (e.g. from a signal handler) to stop the run; it then fails
  // with Cancelled and leaves no output. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

struct RejectedRow {
  std::string source;
  int64_t line = 0;
  std::string error;
};

struct GenRecordsResult {
  struct Output {
    std::string split;  // "" without splits
    std::string path;
    int64_t records = 0;
    uint64_t bytes = 0;  // as stored (compressed when compressed)
  };
  std::vector<Output> outputs;
  int64_t rows_read = 0;
  int64_t rows_written = 0;
  int64_t rows_skipped = 0;
  // The first rejected rows, in input order (at most kMaxRejectedKept).
  std::vector<RejectedRow> rejected;
  static constexpr size_t kMaxRejectedKept = 100;
  uint64_t bytes_read = 0;
  double seconds = 0;
  // The schema used (the inferred one, when inferred).
  Schema schema;
};

// Converts, and moves the files into place when every row went well (or
// was skipped with kSkip).
StatusOr<GenRecordsResult> GenRecords(const GenRecordsOptions& options);

class ShardSet;

// Runs whose files are written and closed under staging directories (inside
// each run's output directory, or a local one for an s3:// output) but not
// yet in place, committed together. An s3:// output is uploaded shard by
// shard at Commit (each shard appears whole), then shards of an older run
// that the new set does not replace are removed.
// Destroying it before Commit() succeeded removes every staged file and every
// directory the runs created, so the output directories are as they were.
// After a successful Commit() it removes the shards the runs replaced. Not
// thread-safe.
class StagedRecords {
 public:
  StagedRecords();
  ~StagedRecords();
  StagedRecords(const StagedRecords&) = delete;
  StagedRecords& operator=(const StagedRecords&) = delete;

  // Converts as GenRecords does, leaving the files staged. A run that fails
  // leaves nothing of its own; the runs staged before it stay staged.
  StatusOr<GenRecordsResult> Stage(const GenRecordsOptions& options);
  // Renames the files of every staged run into place. When a rename fails,
  // the ones made are undone (older shards go back into place) and the
  // error is returned.
  Status Commit();

 private:
  // A run whose output directory is remote (s3://): its shards are staged
  // under a local directory and uploaded by Commit.
  struct RemoteRun;
  StatusOr<GenRecordsResult> StageRemote(const GenRecordsOptions& options);
  Status CommitRemote(RemoteRun* run);

  std::vector<std::unique_ptr<ShardSet>> runs_;
  std::vector<std::unique_ptr<RemoteRun>> remote_;
};

// The runs `dtf gen-records --job` makes: one per CSV source of the job's
// [data] table, each into records/<split>/ (or records/ for an unnamed source
// without a split). The caller fills threads, on_error, overwrite, progress,
// cancel and write_index afterwards.
std::vector<GenRecordsOptions> GenRecordsOptionsFromJob(const JobFile& job);

// Expands glob patterns (a pattern without wildcards names one file, which
// must exist); NotFound names a pattern that matches nothing.
StatusOr<std::vector<std::string>> ExpandInputs(
    const std::vector<std::string>& patterns);

}  // namespace dtf
