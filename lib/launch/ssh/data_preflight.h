// The preflight's data check (`dtf doctor` and every SSH launch): when the
// profile does not ship the data (with_data = false), each host must
// already hold the job's TFRecord shards where its tasks will look for
// them, or the run fails only once every task has started.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/pack/job_data.h"
#include "lib/launch/pack/pack_env.h"
#include "lib/launch/plan.h"
#include "lib/launch/ssh/preflight.h"

namespace dtf::launch {

// The job archive an SSH launch of `request` ships: dtf pack zip of the
// job (with its data when the profile says with_data), or for a batch plan
// its BatchFiles' `shipped` files (pack::PackFiles), written to
// <job dir>/.dtf/pack. Reproducible: an unchanged job gives the same
// archive, and so the same job id, every time.
StatusOr<pack::PackResult> PackJobArchive(const PlanRequest& request);

// Where a host's tasks find record directory `dir`: as it is when
// absolute, else under the unpacked job,
// <work_dir>/jobs/<job_id>/<the job entry's directory>/<dir>.
std::string RemoteRecordDir(const pack::RecordDir& dir,
                            const std::string& work_dir,
                            const std::string& job_id,
                            const std::string& job_entry);

// Checks, over each connected host's session (every host at once), that
// each of `dirs` holds at least one readable shard (part-*.tfrecord*,
// index files aside) where RemoteRecordDir puts it. Rows that passed get
// DATA "ok"; a host missing one fails: DATA "missing", the problem naming
// the path there, the fix `with_data = true` or shared storage at that
// path. Rows that had failed already are left as they are. Each host's
// command may take result->probe_timeout.
void CheckRecordsOnHosts(const std::vector<pack::RecordDir>& dirs,
                         const std::string& job_id,
                         const std::string& job_entry, PreflightResult* result);

// Checks, over each connected host's session (every host at once), that
// each of `files` (absolute) is a readable file there. Rows that passed
// get DATA "ok"; a host lacking one fails: DATA "missing", the problem
// naming the path, the fix `with_data = true` or shared storage at that
// path. Rows that had failed already are left as they are. Each host's
// command may take result->probe_timeout.
void CheckFilesOnHosts(const std::vector<std::string>& files,
                       PreflightResult* result);

// The data check for `plan` (backend "ssh") whose job archive is `job`:
// DATA "shipped" on every row when plan.with_data, else
// CheckRecordsOnHosts with the job's record directories (JobRecordDirs,
// with plan.sets); for a batch plan CheckFilesOnHosts with `batch`'s
// on_hosts instead. Errors: the job file's.
Status CheckJobData(const Plan& plan, const pack::PackResult& job,
                    PreflightResult* result, const BatchFiles& batch = {});

}  // namespace dtf::launch
