#include "lib/launch/spark/spark_doctor.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/spark/spark_plan.h"
#include "lib/launch/spark/spark_preflight.h"

namespace dtf::launch::spark {
namespace {

namespace fs = std::filesystem;

// The profile as the plan recorded it, for the preflight's checks.
Profile ProfileOf(const Plan& plan) {
  Profile p;
  p.source = plan.profile_source;
  MutableSparkTable(&p) = SparkPartOf(plan).profile;
  return p;
}

SparkCheck RunsDirCheck(const Plan& plan) {
  SparkCheck c{"run_dir", false, ""};
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
  c.detail = StrCat(runs,
                    " is writable here; whether every executor sees it at "
                    "the same path (shared storage) cannot be checked from "
                    "here");
  return c;
}

}  // namespace

std::vector<SparkCheck> CheckSparkPlan(const Plan& plan) {
  const Profile profile = ProfileOf(plan);
  const SparkProfile& sp = SparkPartOf(plan).profile;
  std::vector<SparkCheck> out;
  SparkCheck submit{"spark_submit", false, ""};
  if (StatusOr<std::string> found = FindSparkSubmit(profile); found.ok()) {
    submit.ok = true;
    submit.detail = *found;
  } else {
    submit.detail = std::string(Message(found.status()));
  }
  out.push_back(submit);
  SparkCheck master{"master", false, ""};
  if (!StandaloneMaster(sp.master)) {
    master.ok = true;
    master.detail = StrCat(sp.master,
                           ": not a standalone master; spark-submit "
                           "reaches it at launch");
  } else if (Status s = CheckMasterReachable(profile, 5000); s.ok()) {
    master.ok = true;
    master.detail = StrCat(sp.master, " accepts connections");
  } else {
    master.detail = std::string(Message(s));
  }
  out.push_back(master);
  out.push_back(RunsDirCheck(plan));
  return out;
}

std::string SparkCheckTable(const std::vector<SparkCheck>& checks) {
  size_t width = 5;
  for (const SparkCheck& c : checks) width = std::max(width, c.check.size());
  std::string out = StrCat(PadRight("CHECK", width), "  OK   DETAIL\n");
  for (const SparkCheck& c : checks) {
    StrAppend(&out, PadRight(c.check, width), "  ", c.ok ? "yes" : "NO ", "  ",
              c.detail, "\n");
  }
  return out;
}

}  // namespace dtf::launch::spark
