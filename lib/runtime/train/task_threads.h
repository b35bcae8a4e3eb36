// How many compute threads a worker takes when neither dtf serve's
// --threads nor the job's train.threads says: the CPUs it may run on,
// shared among the run's tasks on its host, so that a local run of a PS
// and two workers on a laptop does not start three pools of one thread per
// core each (Horovod leaves this to the user: OMP_NUM_THREADS = cores /
// local size).
#pragma once

#include <string>
#include <vector>

namespace dtf::runtime {

struct HostCpus {
  int usable = 1;  // in this process's affinity mask
  int online = 1;  // on the machine
};

// This process's CPUs.
HostCpus ThisProcessCpus();

// The threads of the task at `self` ("host:port") of a run whose tasks
// listen on `ps` and `workers`: `cpus.usable` when it is less than
// `cpus.online` (a scheduler such as Slurm, or taskset, already gave this
// task its own CPUs), else `cpus.usable` divided by the number of the run's
// tasks whose host is `self`'s — at least 1.
int SharedHostThreads(const std::vector<std::string>& ps,
                      const std::vector<std::string>& workers,
                      const std::string& self, HostCpus cpus);

}  // namespace dtf::runtime
