// Hostfiles as Horovod, DeepSpeed and MPI users already have them: one host
// a line, `host [slots=N] [gpus=M] [ps=true|false] [user=U] [port=P]`,
// `#` comments, blank lines ignored. Horovod's `host:N` and OpenMPI's
// `max_slots=N` are read too (as slots).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch {

struct HostEntry {
  std::string host;  // a name or address, as ssh takes it
  int slots = 1;     // tasks it may run; default 1
  int gpus = 0;      // GPUs the plan may give its tasks; default 0
  // Whether parameter servers may run there. Default true.
  bool ps = true;
  // Per-host SSH overrides of the profile's [ssh] table.
  std::optional<std::string> user;
  std::optional<int> port;
  int line = 0;  // 1-based, for errors found later
};

// Parses hostfile text; `source` names it in errors, which read
// "<source>:<line>:<col>: what is wrong". A host listed twice is an error.
StatusOr<std::vector<HostEntry>> ParseHostfile(std::string_view text,
                                               std::string_view source);
// The longest hostfile read (a million hosts of 16 bytes).
inline constexpr size_t kMaxHostfileBytes = size_t{16} << 20;
// Reads and parses a hostfile; one longer than kMaxHostfileBytes (such as
// /dev/zero given by mistake) is refused as such once that much is read.
StatusOr<std::vector<HostEntry>> LoadHostfile(const std::string& path);

}  // namespace dtf::launch
