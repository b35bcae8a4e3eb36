// s3://bucket/key paths: recognising, splitting and joining them, and the
// URL encoding S3 signs (RFC 3986 unreserved characters kept).
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

inline constexpr char kS3Scheme[] = "s3://";

struct S3Path {
  std::string bucket;
  std::string key;  // may be empty (the bucket itself) or end in '/'
};

// Whether `path` names an object store location ("s3://...").
bool IsS3Path(std::string_view path);
// Splits "s3://bucket/key"; InvalidArgument naming `path` when the bucket
// is missing or not a valid bucket name.
StatusOr<S3Path> ParseS3Path(std::string_view path);
// "s3://bucket/key".
std::string S3PathString(const S3Path& path);
// Percent-encodes all but A-Z a-z 0-9 - _ . ~ (and '/' when `keep_slash`).
std::string S3UrlEncode(std::string_view text, bool keep_slash);

}  // namespace dtf
