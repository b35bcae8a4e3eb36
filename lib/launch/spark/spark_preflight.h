// What the Spark backend checks and prepares before it submits anything:
// spark-submit, the standalone master, the archives it ships.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/spark/spark_profile.h"

namespace dtf::launch::spark {

// The spark-submit the profile names: a path as it is, a bare name looked
// up in $PATH. FailedPrecondition naming spark.spark_submit when it is not
// there or not executable.
StatusOr<std::string> FindSparkSubmit(const Profile& profile);

// For a standalone master (spark://HOST:PORT), that it accepts a TCP
// connection within `timeout_ms`; Unavailable naming the master, the
// profile key and the reason otherwise. OK for other masters (yarn,
// local-cluster): spark-submit reports those.
Status CheckMasterReachable(const Profile& profile, int timeout_ms);

// Packs the runtime (dtf pack env of this binary, cached) and the job
// (dtf pack zip) under the job directory's .dtf/pack and sets the
// request's env_id, job_id and job_entry; for a batch request, the
// runtime alone (its tasks run their commands on the launcher's files).
// `*note` says why a cached runtime was not used ("" when it was or there
// was none).
Status PackSparkArchives(PlanRequest* request, std::string* note);

}  // namespace dtf::launch::spark
