// libFuzzer target for ExpandHostlist (SLURM_JOB_NODELIST and friends).
// Every input must expand or give an InvalidArgument naming the list and a
// column inside it ("hostlist "...":<col>: "); an expansion holds at most
// kMaxHostlistHosts names, none empty and none holding a separator, and
// the names joined by commas expand to themselves.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/launch/slurm/hostlist.h"

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "hostlist_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dtf::launch::slurm::ExpandHostlist;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto hosts = ExpandHostlist(text);
  if (!hosts.ok()) {
    Check(hosts.status().code() == dtf::StatusCode::kInvalidArgument,
          "error is not InvalidArgument");
    const std::string prefix =
        dtf::StrCat("hostlist ", dtf::QuoteForMessage(text), ":");
    const std::string message(dtf::Message(hosts.status()));
    Check(message.rfind(prefix, 0) == 0, "error does not name the list");
    const long col = std::strtol(message.c_str() + prefix.size(), nullptr, 10);
    Check(col >= 1 && static_cast<size_t>(col) <= size + 1,
          "error column outside the list");
    return 0;
  }
  Check(hosts->size() <= dtf::launch::slurm::kMaxHostlistHosts,
        "more names than the cap");
  std::string joined;
  for (const std::string& h : *hosts) {
    Check(!h.empty(), "empty host name");
    Check(h.find_first_of(", \t\r\n[]") == std::string::npos,
          "host name holds a separator or bracket");
    if (joined.size() < (1u << 20)) {
      joined += joined.empty() ? "" : ",";
      joined += h;
    }
  }
  if (joined.size() < (1u << 20)) {
    auto again = ExpandHostlist(joined);
    Check(again.ok() && *again == *hosts, "names do not expand to themselves");
  }
  return 0;
}
