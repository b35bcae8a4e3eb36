// Internal to lib/data: the reader of the job file's [features] table
// (docs/job-file.md) into a FeatureSpec (lib/data/features.h). LoadJobFile
// (lib/data/job_file.h) is the public face.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/data/features.h"
#include "lib/data/schema.h"

namespace dtf {

namespace toml_util {
class Reader;
struct Table;
}  // namespace toml_util

// Reads the [features] table into `*spec`, resolving and checking sources
// against `schema` (which must be valid) and vocabulary files against
// `dir`. Errors are InvalidArgument
// "<file>:<line>:<col>: features.<kind>[<i>].<key>: what is wrong". Every
// element's key and its keys are remembered in `r` for later checks.
Status ParseFeatureSpec(toml_util::Reader& r, const toml_util::Table& table,
                        const Schema& schema, const std::string& dir,
                        FeatureSpec* spec);

}  // namespace dtf
