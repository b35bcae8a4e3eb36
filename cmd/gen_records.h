// dtf gen-records --profile: a job's conversion spread over the profile's
// workers (a batch plan, one task per worker, each `dtf gen-records --job
// J --part K --of W --stage-dir <its task dir>/records`): every task reads
// every input and writes the shard files whose number % W == K, whole, into
// its task directory; once every task has exited 0 the launcher moves them
// into the job's records directories, all of them or none. The output is
// the same files, byte for byte, as `dtf gen-records --job J` writes.
#pragma once

#include <string>
#include <vector>

#include "cmd/app.h"
#include "lib/base/status.h"

namespace dtf::cli {

struct GenRecordsOnProfile {
  std::string job;
  std::string profile;
  int workers = 0;       // 0: the profile's
  std::string runs_dir;  // "": the profile's, else the job's .dtf/runs
  bool overwrite = false;
  // Flags every task gets besides its part (--shards, --compression,
  // --threads, --index, --on-error).
  std::vector<std::string> task_flags;
};

// Runs it; an error names the task that failed, or says why nothing ran
// (a backend whose tasks do not share this machine's files, an s3:// output,
// shards already in place without --overwrite).
Status RunGenRecordsOnProfile(const GenRecordsOnProfile& g, Context* ctx);

}  // namespace dtf::cli
