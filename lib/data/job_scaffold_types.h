// What `dtf init` (lib/data/job_scaffold.h) is asked for and what it reports:
// its options, and the columns and label it decided on. Shared by the
// scaffold and the writer of its dtf.toml (lib/data/job_scaffold_toml.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/data/csv_row.h"

namespace dtf {

struct ScaffoldOptions {
  // The job directory to create. Must not exist, or be empty.
  std::string dir;
  // The training CSV (with a header line). Empty: a small synthetic data
  // set is written to dir/data/ and used.
  std::string train_csv;
  // The evaluation CSV; empty: the training CSV is split 80/20 by hash.
  std::string eval_csv;
  // The label column. Required with train_csv.
  std::string label;
  CsvOptions csv;
  // Guess csv.delimiter from the training CSV (, ; tab |; ".tsv" is tab).
  // Default: true; false keeps csv.delimiter as given.
  bool sniff_delimiter = true;
  // Rows profiled per file, the first ones; 0: all. Default: 0.
  int64_t max_rows = 0;
  // Rows without a label: refused (the default), or left to `gen-records
  // --on-error skip` with a warning in ScaffoldResult::warnings.
  bool skip_missing_labels = false;
};

// What init decided for one column.
struct ScaffoldColumn {
  std::string name;
  std::string type;     // "int", "float", "str"
  std::string format;   // "plain", "number", "decimal_comma", "bool"
  std::string feature;  // "numeric", "numeric+buckets", "categorical",
                        // "hashed", or "none"
  std::string why;      // with "none": "label", "no values", "identifier: ..."
  std::string note;     // how cells are read, when not plain
};

// The label's values in the training CSV.
struct ScaffoldLabel {
  std::string column;
  std::string task;  // "binary", "multiclass", "regression"
  int64_t rows = 0;
  // Classification: each value as written and its rows, most frequent first.
  std::vector<std::pair<std::string, int64_t>> classes;
  // Regression: range and mean.
  double min = 0, max = 0, mean = 0;
};

struct ScaffoldResult {
  // Files written, relative to dir.
  std::vector<std::string> files;
  std::string train_csv;
  char delimiter = ',';
  bool delimiter_sniffed = false;    // guessed, not given
  int64_t rows = 0;                  // training rows profiled
  std::vector<std::string> missing;  // cell texts the schema reads as missing
  ScaffoldLabel label;
  std::vector<ScaffoldColumn> columns;  // in CSV order
  // What the user should know that did not stop init ("file:line: ...").
  std::vector<std::string> warnings;
};

}  // namespace dtf
