#include "lib/runtime/train/task_threads.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "lib/base/host_name.h"

namespace dtf::runtime {

HostCpus ThisProcessCpus() {
  HostCpus cpus;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpus.online = online > 0 ? int(online) : 1;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  cpus.usable = sched_getaffinity(0, sizeof(mask), &mask) == 0
                    ? std::max(1, CPU_COUNT(&mask))
                    : cpus.online;
  return cpus;
}

int SharedHostThreads(const std::vector<std::string>& ps,
                      const std::vector<std::string>& workers,
                      const std::string& self, HostCpus cpus) {
  const int usable = std::max(1, cpus.usable);
  if (usable < cpus.online) return usable;
  const std::string_view host = HostOfAddress(self);
  int tasks = 0;
  for (const auto* list : {&ps, &workers}) {
    for (const std::string& address : *list) {
      if (HostOfAddress(address) == host) ++tasks;
    }
  }
  return std::max(1, usable / std::max(1, tasks));
}

}  // namespace dtf::runtime
