#include "lib/launch/allreduce_members.h"

#include "lib/base/strings.h"

namespace dtf::launch {

void SetMembers(const std::vector<int>& members, Plan* plan) {
  // What `dtf serve` takes without the flag: the workers started at
  // launch.
  bool every = int(members.size()) == plan->StartedAtLaunch();
  for (size_t k = 0; every && k < members.size(); ++k) {
    every = members[k] == int(k);
  }
  for (TaskPlan& task : plan->tasks) {
    if (task.role != Role::kWorker) continue;
    std::vector<std::string>& argv = task.argv;
    for (size_t k = 0; k < argv.size(); ++k) {
      if (argv[k] == "--members" && k + 1 < argv.size()) {
        argv.erase(argv.begin() + std::ptrdiff_t(k),
                   argv.begin() + std::ptrdiff_t(k + 2));
        break;
      }
    }
    if (every) continue;
    argv.push_back("--members");
    argv.push_back(MembersList(members));
  }
}

std::string MembersList(const std::vector<int>& members) {
  std::string list;
  for (const int m : members) StrAppend(&list, list.empty() ? "" : ",", m);
  return list;
}

}  // namespace dtf::launch
