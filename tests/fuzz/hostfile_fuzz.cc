// libFuzzer target for ParseHostfile. Every input must parse or give an
// error naming "fuzz.hosts:<line>:<col>:"; a parsed hostfile must hold
// distinct, non-empty host names with slots >= 1, gpus >= 0, a port in
// 1..65535 when given, and ascending line numbers within the input, and
// must parse to the same hosts when written back in dtf's own syntax.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/launch/hostfile.h"

namespace {

using dtf::launch::HostEntry;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "hostfile_fuzz: %s\n", what);
  std::abort();
}

std::string Line(const HostEntry& h) {
  std::string line = dtf::StrCat(h.host, " slots=", h.slots, " gpus=", h.gpus,
                                 " ps=", h.ps ? "true" : "false");
  if (h.user) line += dtf::StrCat(" user=", *h.user);
  if (h.port) line += dtf::StrCat(" port=", *h.port);
  return line + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto hosts = dtf::launch::ParseHostfile(text, "fuzz.hosts");
  if (!hosts.ok()) {
    Check(dtf::Message(hosts.status()).rfind("fuzz.hosts:", 0) == 0,
          "error does not name the hostfile");
    return 0;
  }
  std::set<std::string> names;
  std::string written;
  int last_line = 0;
  for (const HostEntry& h : *hosts) {
    Check(!h.host.empty(), "empty host name");
    Check(names.insert(h.host).second, "host listed twice");
    Check(h.slots >= 1 && h.gpus >= 0, "slots or gpus out of range");
    Check(!h.port || (*h.port >= 1 && *h.port <= 65535), "port out of range");
    Check(h.line > last_line, "line numbers out of order");
    last_line = h.line;
    written += Line(h);
  }
  auto again = dtf::launch::ParseHostfile(written, "again.hosts");
  Check(again.ok(), "written hostfile does not parse");
  Check(again->size() == hosts->size(), "written hostfile lost hosts");
  for (size_t i = 0; i < hosts->size(); ++i) {
    const HostEntry& a = (*hosts)[i];
    const HostEntry& b = (*again)[i];
    Check(a.host == b.host && a.slots == b.slots && a.gpus == b.gpus &&
              a.ps == b.ps && a.user == b.user && a.port == b.port,
          "written hostfile reads differently");
  }
  return 0;
}
