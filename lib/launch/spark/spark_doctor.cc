#include "lib/launch/spark/spark_doctor.h"

#include "lib/base/strings.h"
#include "lib/launch/spark/spark_plan.h"
#include "lib/launch/spark/spark_preflight.h"

namespace dtf::launch::spark {
namespace {

// The profile as the plan recorded it, for the preflight's checks.
Profile ProfileOf(const Plan& plan) {
  Profile p;
  p.source = plan.profile_source;
  MutableSparkTable(&p) = SparkPartOf(plan).profile;
  return p;
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
  out.push_back(RunsDirCheck(
      plan,
      "whether every executor sees it at the same path (shared storage) "
      "cannot be checked from here"));
  return out;
}

}  // namespace dtf::launch::spark
