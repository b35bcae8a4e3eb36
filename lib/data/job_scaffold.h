// `dtf init`: a job directory made from a CSV file. Profiles the CSV's
// columns (type, missing cells, distinct values, quantiles) and writes a
// dtf.toml whose schema, feature columns, model and training settings suit
// the data, so `gen-records` and `train` run on it without edits.
#pragma once

#include "lib/base/status.h"
#include "lib/data/job_scaffold_types.h"

namespace dtf {

// Errors, besides I/O: a CSV that does not parse; duplicate header names
// (file:1:col, naming both); an eval CSV whose header differs from the
// training CSV's (file:1:col); the label missing from the header; a row
// without a label (file:line); no column to learn from.
StatusOr<ScaffoldResult> ScaffoldJob(const ScaffoldOptions& options);

}  // namespace dtf
