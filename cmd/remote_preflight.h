// The launch preflight of a job whose data or output is in an object store
// (s3://): from the launching host, before any task starts, each split's
// shards can be listed and the first one read, and output_dir can be
// listed. The error names this host, the bucket and the key.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::cli {

// Checks the job at `job_path` with the overrides `sets`; OK at once when
// none of its records or output_dir is remote.
Status CheckRemoteData(const std::string& job_path,
                       const std::vector<std::string>& sets);

}  // namespace dtf::cli
