// The workers of an allreduce run taking part after its launcher restarted
// every worker at another size (docs/launch.md, *Elastic workers*): a
// worker lost while min_workers allows it, or slots started by `dtf
// scale`. Each worker's command line says so (`dtf serve --members`), and
// every task started again takes it (RestartArgv copies it).
#pragma once

#include <string>
#include <vector>

#include "lib/launch/plan.h"

namespace dtf::launch {

// Gives every worker task of `plan` `--members` with `members` (ascending
// worker indexes), replacing what it had; none where `members` are the
// workers the plan starts at launch (what `dtf serve` takes without it).
void SetMembers(const std::vector<int>& members, Plan* plan);

// "0,2".
std::string MembersList(const std::vector<int>& members);

}  // namespace dtf::launch
