// A profile's [s3] table (docs/launch.md, "Profiles"; docs/storage.md,
// "Credentials of a run's tasks"): how the run's tasks reach an
// S3-compatible store. Any backend's profile may have one. It names
// settings, never a secret.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "lib/base/status.h"

namespace dtf::toml_util {
class Reader;
struct Table;
}  // namespace dtf::toml_util

namespace dtf::launch {

// Each key left out keeps what the launcher's own environment and ~/.aws
// give.
struct ProfileS3 {
  bool present = false;  // the profile has an [s3] table
  // endpoint: "http://minio.internal:9000"; region: "eu-west-1".
  std::string endpoint;
  std::string region;
  // profile: the AWS profile (~/.aws/credentials, ~/.aws/config) the
  // launcher reads the credentials from, in place of AWS_PROFILE and the
  // AWS_ACCESS_KEY_ID variables.
  std::string profile;
  // path_style: endpoint/bucket/key URLs (true) or bucket.endpoint/key
  // (false). Unset: path-style with a custom endpoint.
  std::optional<bool> path_style;
  // credentials: "launcher" (the default) passes the access key, secret
  // and session token the launcher resolved to every task, in a 0600 file
  // as the run's secret travels; "tasks" passes none, and each task uses
  // what its own host or pod has (its ~/.aws, an instance or pod role
  // through its environment).
  bool pass_credentials = true;
};

// Reads the [s3] table of the profile `profile` (none: nothing) into
// `s3`, and its keys' places into `where` ("s3", "s3.<key>": "<file>:
// <line>:<col>"). InvalidArgument "<file>:<line>:<col>: s3.<key>: ..."
// for an unknown key, a value of the wrong type, an empty string, an
// endpoint that is not an http:// or https:// URL, or a credentials value
// other than "launcher" and "tasks".
Status ReadS3Table(const toml_util::Reader& reader,
                   const toml_util::Table& profile, ProfileS3* s3,
                   std::map<std::string, std::string>* where);

}  // namespace dtf::launch
