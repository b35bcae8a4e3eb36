// What each shard of a batch job (batch_job.h) writes and how the launcher
// puts the shards back together (man/dtf-predict.1, "Sharded scoring").
//
// The split is the input pipeline's (lib/data/shard_assignment.h): with N
// input files (sorted) and W shards, N >= W gives shard k the whole files
// k, k+W, k+2W, ...; N < W gives it the records whose global index j has
// j % W == k. Shard k of W writes its rows to <output>.shard-k-of-W, one row
// a line (JSON lines, or CSV with its header), and an index beside it,
// <output>.shard-k-of-W.rows, naming the rows it wrote per file:
//   rows <total>
//   inputs <the number of input files the shard saw>
//   file <position in the sorted list> <rows>     (whole files only)
// The launcher merges the shards into the input's order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch {

// The lines a shard task writes on stderr to report its progress:
// "<kShardProgress><rows written so far>".
inline constexpr std::string_view kShardProgress = "dtf-predict-progress ";

// The line a shard task holding its shard for a fetch (--hold-for-fetch)
// writes last on stderr: "<kShardReady><rows>".
inline constexpr std::string_view kShardReady = "dtf-predict-ready ";

// "<output>.fetched": made by `dtf task shard-release` once the launcher
// holds the shard; the task that waits for it then ends.
std::string ShardFetchedPath(const std::string& shard_output);
bool ShardWasFetched(const std::string& shard_output);

// "<output>.shard-<k>-of-<w>".
std::string ShardOutputPath(const std::string& output, int k, int w);
// Its index: "<shard output>.rows".
std::string ShardIndexPath(const std::string& shard_output);

// What a shard's index says.
struct ShardIndex {
  int64_t rows = 0;
  // Whole files: (position in the sorted list, rows) in the order read.
  std::vector<std::pair<int64_t, int64_t>> files;
  // The input files the shard's patterns matched; -1: not said.
  int64_t inputs = -1;
};
std::string ShardIndexToText(const ShardIndex& index);
// DataLoss naming `name` and the line when `text` is not an index.
StatusOr<ShardIndex> ShardIndexFromText(std::string_view text,
                                        std::string_view name);

// The end of the row starting at `pos` (just past its '\n', or text.size()
// for a last row without one). A CSV row may hold newlines inside quoted
// cells; a JSON line never does.
size_t ShardRowEnd(std::string_view text, size_t pos, bool csv);

// One shard's output and index, as read back.
struct ShardOutput {
  std::string name;  // for errors: its path
  std::string text;
  ShardIndex index;
};

// The input file count the shards' indexes agree on (what a launcher that
// cannot list the files itself merges with). DataLoss naming a shard whose
// index says another count, or none.
StatusOr<int64_t> ShardInputCount(const std::vector<ShardOutput>& shards);

// A shard's index and output in one stream, as `dtf task shard-fetch` writes
// it on stdout for a launcher that can only run a command where the shard
// is (a Kubernetes pod): "dtf-shard <index bytes> <output bytes>\n", the
// index, the output.
std::string ShardFrame(std::string_view index_text, std::string_view output);
// The shard back from a frame, its index parsed. DataLoss naming `name`
// when the bytes are not one whole frame (cut short, or more after it).
StatusOr<ShardOutput> ShardFromFrame(std::string_view frame, std::string name);

// The shards' rows in input order: the CSV header (every shard's first row,
// the same in each) once, then, for `num_files` >= shards.size(), file f's
// rows from shard f % W in turn, else row j from shard j % W. DataLoss
// naming the shard when the outputs and the indexes do not agree (a row
// count, a file a shard should not have read, a different header, an index
// whose input file count is not `num_files`).
StatusOr<std::string> MergeShardOutputs(const std::vector<ShardOutput>& shards,
                                        int64_t num_files, bool csv);

}  // namespace dtf::launch
