// The S3 settings and credentials of a run's tasks (docs/storage.md,
// "Credentials of a run's tasks"). The launcher resolves them once, from
// its environment and ~/.aws with the profile's [s3] table over them, uses
// them itself (the preflight, --resume) and writes them for the tasks into
// <run dir>/s3-credentials, a 0600 file of NAME=value lines that travels
// as the run's secret does; each task's dtf serve reads it before it opens
// any s3:// path. The file's names:
//
//   AWS_ENDPOINT_URL   the endpoint ("" or absent: AWS)
//   AWS_REGION         the region requests are signed for
//   DTF_S3_PATH_STYLE  "true" (endpoint/bucket/key) or "false"
//   AWS_PROFILE        credentials = "tasks" with a profile named: the
//                      task's own ~/.aws profile of that name
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
//                      credentials = "launcher" (the default), when the
//                      launcher has credentials
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/s3_options.h"
#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"

namespace dtf::cli {

using GetEnv = std::function<const char*(const char*)>;

// The launcher's S3 settings for a run of `profile`: its environment and
// ~/.aws (S3OptionsFromEnvironment), with [s3] profile read in place of
// AWS_PROFILE and the AWS_ACCESS_KEY_ID variables, and [s3] endpoint,
// region and path_style over what they give. Errors name the profile key
// or the AWS profile and its files.
StatusOr<S3Options> LauncherS3Options(const launch::Profile& profile,
                                      const GetEnv& getenv);

// The file's bytes for `options` (see above); `variables` gets the names
// it sets, in the file's order.
std::string TaskS3FileText(const S3Options& options,
                           const launch::ProfileS3& s3,
                           std::vector<std::string>* variables);

// A task's settings from the file's bytes `text` (`name` names it in
// errors) over its own environment: endpoint, region and addressing are
// the file's; the credentials are the file's when it has an access key,
// else the task's own (its AWS_* variables, its ~/.aws, AWS_PROFILE from
// the file when it names one). InvalidArgument naming the file and line
// for a line that is not NAME=value.
StatusOr<S3Options> TaskS3Options(std::string_view text,
                                  const std::string& name,
                                  const GetEnv& getenv);

// Reads `path` (0600, owned by this user, as the run's secret) and hands
// TaskS3Options of it to the storage seam; before any s3:// path is
// opened. Errors name the file.
Status ConfigureStorageFromTaskFile(const std::string& path);

// For a launch of `request` whose job (with its --set values) names an
// s3:// path ([data] records or csv, [train] output_dir, --metrics-out) or
// whose profile has an [s3] table: resolves LauncherS3Options, configures
// this process's storage with them, and sets request->s3_credentials and
// s3_variables. Nothing for any other launch.
Status PrepareTaskStorage(launch::PlanRequest* request);

// The same for a run of `profile` known to use S3 (a batch job with an
// s3:// model, input or output): the file's text and its variables.
Status PrepareTaskS3(const launch::Profile& profile, std::string* file_text,
                     std::vector<std::string>* variables);

}  // namespace dtf::cli
