// What the local and Slurm backends read of a task from the files it
// writes into its task directory (on this machine, or on storage the
// launcher shares with the nodes): its ready file and its output.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/launch/backend.h"
#include "lib/launch/log_tail.h"

namespace dtf::launch {

// The address task wrote to `ready_file` (surrounding space trimmed);
// nullopt while the file is missing, unreadable or empty (being written).
std::optional<std::string> ReadReadyAddress(const std::string& ready_file);

// The tails of every task's stdout and stderr (task i's at 2i and 2i + 1),
// in plan order; for a resumed run, from the files' ends (the earlier
// attempt's lines are not shown again).
std::vector<std::unique_ptr<LineTail>> OpenTaskTails(const Plan& plan);

// Polls `tails` (stdout and stderr of each task, in plan order: task i's
// at 2i and 2i + 1) and hands every new line to `events`; with `flush`,
// also a last line without its '\n'.
void PollTaskTails(const std::vector<std::unique_ptr<LineTail>>& tails,
                   BackendEvents& events, bool flush);

}  // namespace dtf::launch
