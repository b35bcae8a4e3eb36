// A batch job: one command per shard, run on a profile's workers, each
// shard's output collected and the shards merged, in input order, into one
// file (shards.h). `dtf predict --profile` is one; the command (what a task
// runs) is the caller's, the rest is the backend's (BatchRunner).
//
// Every shard's command is `args` (built for where the task reads its
// files) followed by the shard flags the backend chooses, which the command
// must take:
//   --shard K --of W --output FILE --ready-file FILE
// or, where the shard number comes from the task's environment,
//   --shard-from-env NAME --of W --output FILE --hold-for-fetch SECONDS
// It writes its rows and their index (shards.h) to FILE, reports progress
// on stderr with kShardProgress lines and, holding for a fetch, ends its
// stderr with a kShardReady line.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/run_options.h"

namespace dtf::launch {

struct BatchJob {
  // Names the job in what the launcher says: "dtf: <title>: run ...".
  std::string title;
  // What a shard does to a record, for the progress line ("scored").
  std::string done;
  // The shard count (the workers of the run).
  int shards = 1;
  // The merged output: an absolute path; `output_name` is how the user
  // gave it, for messages.
  std::string output;
  std::string output_name;
  // The shards' rows are CSV with a header (else JSON lines).
  bool csv = false;

  // The directory every task reads (a model), as given, and the names of
  // the files in it that a backend which copies files one by one ships (a
  // Kubernetes ConfigMap); a backend that ships archives takes all of it.
  std::string dir;
  std::vector<std::string> dir_files;
  // Checks `dir` before any task starts (what the tasks would refuse).
  std::function<Status()> check_dir;

  // The input patterns as given, and the files they stand for in the
  // order the shards split them (NotFound for a pattern matching nothing).
  // A backend whose tasks share this machine's paths makes `dir` and
  // `inputs` absolute first.
  std::vector<std::string> inputs;
  std::function<StatusOr<std::vector<std::string>>(
      const std::vector<std::string>& patterns)>
      list_inputs;

  // A task's command without the program and the shard flags, given `dir`
  // and the input patterns (or files) as the task sees them.
  std::function<std::vector<std::string>(
      const std::string& dir, const std::vector<std::string>& inputs)>
      args;

  // Where the run's directory goes (the default when `runs_dir_given` is
  // false: a backend may then prefer its profile's own).
  std::string runs_dir;
  bool runs_dir_given = false;
  // Set: write what would be applied there and start nothing (backends
  // that render manifests only).
  std::string render_dir;
  // The S3 settings and credentials every task gets, as a training run's
  // tasks do (PlanRequest::s3_credentials, s3_variables); "" for none. The
  // command then takes --s3-credentials FILE after its shard flags.
  std::string s3_credentials;
  std::vector<std::string> s3_variables;
};

// What a batch run says and where it stops.
struct BatchIo {
  // A line for the console, and a warning.
  std::function<void(std::string_view)> info;
  std::function<void(std::string_view)> warning;
  // A line a task wrote that is not a progress line.
  std::function<void(const std::string& task, Stream stream,
                     std::string_view line)>
      task_line;
  // What the run prints on stdout (a rendered job's directory).
  std::function<Status(std::string_view)> print;
  // When it becomes true, the run stops and ends Cancelled. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

// Runs a batch job on the workers of one profile (batch_runners.h makes
// the one for a profile's backend).
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;

  // Runs every shard of `job`, then merges their outputs into job.output
  // (atomically). No shard file is left behind, whatever the outcome; the
  // first error of a task names it.
  virtual Status Run(const BatchJob& job, const BatchIo& io) = 0;
};

}  // namespace dtf::launch
