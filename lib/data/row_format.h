// The row format of the input cache (lib/data/row_cache.h): one parsed row
// of a Batch with its values side by side, so that a shuffled gather of rows
// reads each row from one stretch of memory. Per column, in the specs'
// order:
//   fixed int64 / float: the row's `length` values;
//   var-len int64 / float: a u32 count, then the values;
//   bytes (fixed or var-len): a u32 count, then each value as a u32 size
//   followed by its bytes.
// Host byte order: rows never leave the process (a spill file is removed
// with the cache). Internal to lib/data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/data/batch.h"

namespace dtf {

// Appends row `r` of `batch` (r < batch.rows) to `*out`.
void EncodeRow(const Batch& batch, int64_t r, std::string* out);

// Appends `row` to `*dst` as row dst->rows and increments rows: the columns
// parsing that row's record into `*dst` gives.
// REQUIRES: `row` is whole output of EncodeRow for a batch of the specs
// `*dst` was Reset for, and dst->rows is below the capacity Reset gave.
void AppendEncodedRow(std::string_view row, Batch* dst);

}  // namespace dtf
