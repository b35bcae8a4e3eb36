#include "lib/runtime/train/allreduce_layout.h"

#include <algorithm>

#include "lib/base/strings.h"

namespace dtf::runtime {

StatusOr<AllreduceLayout> LayoutAllreduce(int index, int slots,
                                          const std::vector<int>& given) {
  const std::vector<int> members =
      given.empty() ? StartedMembers(slots, 0) : given;
  const auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        StrCat("--members ", MembersText(members), ": ", why, " (the run has ",
               slots, " worker slot", slots == 1 ? "" : "s", ")"));
  };
  if (members.front() != 0) return bad("the chief, worker 0, must take part");
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] >= slots) return bad("a worker index past the slots");
    if (i > 0 && members[i] <= members[i - 1]) {
      return bad("the indexes must be ascending, each once");
    }
  }
  const auto self = std::find(members.begin(), members.end(), index);
  if (self == members.end()) {
    return bad(StrCat("worker ", index, " is not among them"));
  }
  AllreduceLayout layout;
  layout.rank = int(self - members.begin());
  layout.size = int(members.size());
  layout.shards.push_back(index);
  // The slots not taking part, dealt from the last rank down.
  int next = layout.size - 1;
  for (int s = 0; s < slots; ++s) {
    if (std::binary_search(members.begin(), members.end(), s)) continue;
    if (next == layout.rank) layout.shards.push_back(s);
    next = next == 0 ? layout.size - 1 : next - 1;
  }
  return layout;
}

std::vector<int> StartedMembers(int slots, int started) {
  const int n = started > 0 ? std::min(started, slots) : slots;
  std::vector<int> members;
  for (int i = 0; i < std::max(n, 1); ++i) members.push_back(i);
  return members;
}

std::string MembersText(const std::vector<int>& members) {
  std::string text;
  for (const int m : members) StrAppend(&text, text.empty() ? "" : ",", m);
  return text;
}

}  // namespace dtf::runtime
