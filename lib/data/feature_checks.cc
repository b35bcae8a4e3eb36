#include "lib/data/feature_checks.h"

#include <optional>

#include "absl/strings/str_format.h"
#include "lib/base/strings.h"

namespace dtf {

std::string FeatureKey(FeatureKind kind, size_t index) {
  return absl::StrFormat("features.%s[%d]", FeatureKindName(kind), index);
}

Status CheckDatePartNames(const toml_util::Reader& r, const FeatureSpec& spec) {
  for (const DateFeature& f : spec.date) {
    for (DatePart part : f.parts) {
      const std::string derived = StrCat(f.name, "/", DatePartName(part));
      const std::optional<FeatureSpec::Ref> ref = spec.Find(derived);
      if (!ref) continue;
      const std::string other = FeatureKey(ref->kind, ref->index);
      return r.Error(r.Where(other + ".name"), other + ".name",
                     StrCat(QuoteForMessage(derived),
                            " is the name of a part of date feature ",
                            QuoteForMessage(f.name), "; rename one"));
    }
  }
  return OkStatus();
}

Status CheckEveryFeatureFeeds(const toml_util::Reader& r,
                              const FeatureSpec& spec,
                              const std::set<std::string>& used) {
  auto check = [&](const auto& list, FeatureKind kind) -> Status {
    for (size_t i = 0; i < list.size(); ++i) {
      const FeatureSpec::Ref ref{kind, i};
      if (spec.FeedsWide(ref) || spec.FeedsDeep(ref) ||
          used.count(list[i].name) > 0) {
        continue;
      }
      const std::string key = FeatureKey(kind, i);
      return r.Error(r.Where(key), key,
                     kind == FeatureKind::kNumeric
                         ? "feeds nothing: deep and wide are false and no "
                           "bucketized feature uses it"
                     : kind == FeatureKind::kDate || kind == FeatureKind::kText
                         ? "feeds nothing: set wide = true or an embedding "
                           "size"
                         : "feeds nothing: set wide = true or an embedding "
                           "size, or use it in a crossed feature");
    }
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(check(spec.numeric, FeatureKind::kNumeric));
  DTF_RETURN_IF_ERROR(check(spec.categorical, FeatureKind::kCategorical));
  DTF_RETURN_IF_ERROR(check(spec.hashed, FeatureKind::kHashed));
  DTF_RETURN_IF_ERROR(check(spec.bucketized, FeatureKind::kBucketized));
  DTF_RETURN_IF_ERROR(check(spec.crossed, FeatureKind::kCrossed));
  DTF_RETURN_IF_ERROR(check(spec.date, FeatureKind::kDate));
  return check(spec.text, FeatureKind::kText);
}

}  // namespace dtf
