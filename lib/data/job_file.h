// The job file, dtf.toml (docs/job-file.md): the [data], [schema],
// [features], [model] and [train] tables; any other top-level key is an
// error. Every error is InvalidArgument reading "<file>:<line>:<col>: <key>:
// what is wrong". Relative paths are resolved against the job file's
// directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/compression.h"
#include "lib/data/csv_reader.h"
#include "lib/data/features.h"
#include "lib/data/model_options.h"
#include "lib/data/schema.h"
#include "lib/data/train_options.h"

namespace dtf {

// One named set of CSV inputs ("train", "eval", ...).
struct CsvSource {
  std::string split;
  std::vector<std::string> paths;  // files or globs, resolved
};

struct SplitFraction {
  std::string name;
  double fraction = 0;
};

struct DataSpec {
  // [data] csv = ["a.csv"] gives one source with split ""; csv = {train =
  // [...], eval = [...]} gives one per split.
  std::vector<CsvSource> csv;
  // [data] split = {train = 0.8, eval = 0.2}: hash split of a single source.
  std::vector<SplitFraction> split;
  // [data] header. Default: true.
  bool header = true;
  // [data] delimiter, quote, trim_spaces.
  CsvOptions csv_options;
  // [data] records: output directory of gen-records. Default: "records".
  std::string records_dir;
  // [data] shards. Default: 1.
  int shards = 1;
  // [data] shard_key: column whose hash picks the shard; empty: round robin.
  std::string shard_key;
  // [data] compression. Default: none.
  Compression compression = Compression::kNone;
};

// Every table is optional: gen-records needs only [data] and [schema]; the
// trainer needs [model] (and so a label and features).
struct JobFile {
  std::string path;
  std::string dir;
  DataSpec data;
  Schema schema;
  // [features]; empty when absent.
  FeatureSpec features;
  // [model]; nullopt when absent.
  std::optional<ModelSpec> model;
  // [train]; every default when absent. Its optimizers are set iff `model`
  // is (a [train] table without [model] is an error).
  TrainSpec train;
};

StatusOr<JobFile> LoadJobFile(const std::string& path);

// As LoadJobFile, with `overrides` ("section.key=value", e.g.
// "train.mode=async", "train.batch_size=64") applied to the file's tables
// first. The value is read as a TOML value ("64", "true", "[1, 2]",
// "\"text\"") or, when it is none, as a string; "train.steps" replaces the
// file's train.epochs and "train.epochs" its train.steps. InvalidArgument
// naming the override when it is malformed or its path crosses a
// non-table.
StatusOr<JobFile> LoadJobFile(const std::string& path,
                              const std::vector<std::string>& overrides);
// As LoadJobFile on a file at `path` holding `text`: `path` names it in
// errors and its directory is what relative paths resolve against; only the
// files the job names are read.
StatusOr<JobFile> ParseJobFile(std::string_view text, const std::string& path,
                               const std::vector<std::string>& overrides = {});
// Reads the [schema] table of any TOML file (a job file or a schema file).
StatusOr<Schema> LoadSchemaFile(const std::string& path);
// The [schema] table that LoadSchemaFile reads back to `schema`.
std::string SchemaToToml(const Schema& schema);

}  // namespace dtf
