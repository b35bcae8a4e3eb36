// `dtf scale RUN --workers N`: a request to a running run's supervisor to
// start worker slots the plan reserved (the profile's max_workers,
// Plan::Reserved). The command writes <run dir>/scale.json; the supervisor
// looks for it as it does for `dtf stop`'s stop.json and starts the
// reserved slots below N (Run::Scale).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {

inline constexpr char kScaleFile[] = "scale.json";

struct ScaleRequest {
  int workers = 0;  // the workers the run is to have
  int64_t requested_ms = 0;
};

// Writes <run_dir>/scale.json (atomically).
Status WriteScaleRequest(const std::string& run_dir, int workers);
// The request in <run_dir>/scale.json; nullopt when there is none. An
// error naming the file when it is not one.
StatusOr<std::optional<ScaleRequest>> ReadScaleRequest(
    const std::string& run_dir);

// The workers of `record`'s run that were started (not reserved, whatever
// became of them since): worker slots below this one.
int StartedWorkers(const Plan& plan, const RunRecord& record);

// Whether `workers` is a size `plan`'s run can be scaled to now, `started`
// workers started so far: an error saying why not (no reserved slots,
// more than max_workers, fewer than are started).
Status CheckScale(const Plan& plan, int started, int workers);

}  // namespace dtf::launch
