// Internal to lib/data: the dtf.toml that `dtf init` (lib/data/job_scaffold.h)
// writes from the profiles of a job's CSV columns: the [data] table that
// reads the CSVs as they were profiled, the [schema] and [features] the
// columns suit, and [model] and [train] settings sized to the data.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/column_profile.h"
#include "lib/data/job_scaffold_types.h"

namespace dtf {

// The job file for the CSVs profiled in `train` (and `eval`, null without an
// eval CSV: the training CSV is then split). Fills `result`'s label,
// columns, missing texts, rows and warnings. Errors as ScaffoldJob's: the
// label not in the header, an eval header that differs, rows without a
// label (unless o.skip_missing_labels), no column to learn from.
StatusOr<std::string> JobToml(const ScaffoldOptions& o,
                              const std::vector<ColumnProfile>& train,
                              const std::vector<ColumnProfile>* eval,
                              ScaffoldResult* result);

}  // namespace dtf
