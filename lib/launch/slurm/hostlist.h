// Slurm host lists ("node[01-04],gpu[1-3,7]"), expanded as `scontrol show
// hostnames` does: what SLURM_JOB_NODELIST and SLURM_STEP_NODELIST hold.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch::slurm {

// The most host names one list may expand to; Slurm refuses ranges of more
// than 64Ki hosts too.
inline constexpr size_t kMaxHostlistHosts = 65536;

// The host names of `list`, in order, duplicates kept: items separated by
// commas (or whitespace, as scontrol reads them), empty items skipped. An
// item is text with bracket groups "[a-b,c,...]": numbers in a group count
// from a to b, each as wide as a is written ("08-10" gives 08 09 10); text
// may follow a group ("rack[1-2]-gpu"), and an item with several groups
// gives every combination, the first group changing slowest
// ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2). InvalidArgument
// "hostlist "<list>":<col>: what is wrong" (col 1-based) for unbalanced or
// nested brackets, an empty group or range, a range whose end is below its
// start, anything but digits in a range, or more than kMaxHostlistHosts
// names.
StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view list);

}  // namespace dtf::launch::slurm
