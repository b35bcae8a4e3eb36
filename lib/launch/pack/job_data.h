// What a job's tasks read from disk besides the job archive: its TFRecord
// directories, as the job file names them. The SSH preflight checks them
// on each host when the data is not shipped (profile with_data = false).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

struct RecordDir {
  // Relative to the job file's directory (`relative`), as the job's
  // [data] records is when it is a relative path, or absolute.
  std::string path;
  bool relative = false;
};

// The directories of TFRecord shards the job at `job_path` reads, with the
// `overrides` ("section.key=value", as its tasks get them) applied: [data]
// records itself when the job has no splits, else its subdirectory for
// each split (what `dtf gen-records --job` writes); none when the records
// are in an object store (s3://). Errors: the job file's
// ("dtf.toml:12:3: ...").
StatusOr<std::vector<RecordDir>> JobRecordDirs(
    const std::string& job_path, const std::vector<std::string>& overrides);

}  // namespace dtf::pack
