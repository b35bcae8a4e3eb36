#include "lib/launch/backend_checks.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace dtf::launch {

namespace fs = std::filesystem;

BackendCheck RunsDirCheck(const Plan& plan, std::string_view unchecked) {
  BackendCheck c{"run_dir", false, ""};
  const std::string runs = fs::path(plan.run_dir).parent_path().string();
  std::error_code ec;
  fs::create_directories(runs, ec);
  if (ec) {
    c.detail = StrCat(runs, ": cannot create it: ", ec.message());
    return c;
  }
  const std::string probe =
      (fs::path(runs) / StrCat(".doctor-", ::getpid())).string();
  Status s = WriteFileAtomically(probe, "dtf doctor\n");
  fs::remove(probe, ec);
  if (!s.ok()) {
    c.detail = StrCat(runs, ": not writable: ", Message(s));
    return c;
  }
  c.ok = true;
  c.detail = StrCat(runs, " is writable here; ", unchecked);
  return c;
}

std::string BackendCheckTable(const std::vector<BackendCheck>& checks) {
  size_t width = 5;
  for (const BackendCheck& c : checks) width = std::max(width, c.check.size());
  std::string out = StrCat(PadRight("CHECK", width), "  OK   DETAIL\n");
  for (const BackendCheck& c : checks) {
    StrAppend(&out, PadRight(c.check, width), "  ", c.ok ? "yes" : "NO ", "  ",
              c.detail, "\n");
  }
  return out;
}

}  // namespace dtf::launch
