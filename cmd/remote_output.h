// A job whose train.output_dir is in an object store (s3://): training
// writes a local mirror of it (lib/base/storage_mirror.h), downloaded at
// start so that a restarted task or --resume finds its checkpoints, and
// uploaded every second and at the end, checkpoint pointers after the files
// they name.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/base/storage_mirror.h"
#include "lib/base/storage_tree.h"
#include "lib/data/job_file.h"

namespace dtf::cli {

// When job->train.output_dir is remote: downloads it, points
// job->train.output_dir at the local copy and starts the periodic upload;
// nullptr when it is local.
StatusOr<std::unique_ptr<StorageMirror>> MirrorOutputDir(JobFile* job);

// The last upload; `run` is the training's outcome, returned when it failed
// (after the upload, so a failed run's checkpoints are kept too), else the
// upload's error.
Status FinishOutputMirror(StorageMirror* mirror, const Status& run);

// A model directory (--model) in a bucket, downloaded into `copy`: its
// local path; a local one as it is. NotFound naming `flag` and the path
// when the prefix holds nothing.
StatusOr<std::string> LocalModelDir(std::string_view flag,
                                    const std::string& model,
                                    LocalStagingDir* copy);

// `path` under the mirror's local directory spelled under its remote one;
// other paths (and any path when `mirror` is null) as they are.
std::string RemoteName(const StorageMirror* mirror, const std::string& path);

}  // namespace dtf::cli
