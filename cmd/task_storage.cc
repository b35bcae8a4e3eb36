#include "cmd/task_storage.h"

#include <cstdlib>
#include <map>

#include "cmd/storage_env.h"
#include "lib/base/bounded_read.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/launch/run_layout.h"

namespace dtf::cli {
namespace {

constexpr char kEndpoint[] = "AWS_ENDPOINT_URL";
constexpr char kRegion[] = "AWS_REGION";
constexpr char kPathStyle[] = "DTF_S3_PATH_STYLE";
constexpr char kProfile[] = "AWS_PROFILE";
constexpr char kKeyId[] = "AWS_ACCESS_KEY_ID";
constexpr char kSecret[] = "AWS_SECRET_ACCESS_KEY";
constexpr char kToken[] = "AWS_SESSION_TOKEN";

bool IsCredentialName(std::string_view name) {
  return name == kKeyId || name == kSecret || name == kToken;
}

bool JobUsesS3(const JobFile& job, const std::string& metrics_out) {
  if (IsRemotePath(job.data.records_dir) ||
      IsRemotePath(job.train.output_dir) || IsRemotePath(metrics_out)) {
    return true;
  }
  for (const CsvSource& source : job.data.csv) {
    for (const std::string& path : source.paths) {
      if (IsRemotePath(path)) return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<S3Options> LauncherS3Options(const launch::Profile& profile,
                                      const GetEnv& getenv) {
  const launch::ProfileS3& s3 = profile.s3;
  // A profile named by [s3] profile gives the credentials, whatever the
  // environment's AWS_PROFILE and AWS_ACCESS_KEY_ID say.
  const GetEnv lookup = [&](const char* name) -> const char* {
    if (s3.profile.empty()) return getenv(name);
    if (std::string_view(name) == kProfile) return s3.profile.c_str();
    if (IsCredentialName(name)) return nullptr;
    return getenv(name);
  };
  StatusOr<S3Options> options = S3OptionsFromEnvironment(lookup);
  if (!options.ok()) {
    if (s3.profile.empty()) return options.status();
    return InvalidArgumentError(
        StrCat(launch::KeyWhere(profile, "s3.profile"),
               ": s3.profile: ", Message(options.status())));
  }
  if (!s3.endpoint.empty()) {
    options->endpoint = s3.endpoint;
    options->path_style = true;
  }
  if (!s3.region.empty()) options->region = s3.region;
  if (s3.path_style) options->path_style = *s3.path_style;
  return options;
}

std::string TaskS3FileText(const S3Options& options,
                           const launch::ProfileS3& s3,
                           std::vector<std::string>* variables) {
  std::string text =
      "# The S3 settings and credentials of a dtf run's tasks "
      "(docs/storage.md); mode 0600.\n";
  variables->clear();
  auto add = [&](const char* name, std::string_view value) {
    StrAppend(&text, name, "=", value, "\n");
    variables->push_back(name);
  };
  add(kEndpoint, options.endpoint);
  add(kRegion, options.region);
  add(kPathStyle, options.path_style ? "true" : "false");
  if (!s3.pass_credentials) {
    if (!s3.profile.empty()) add(kProfile, s3.profile);
    return text;
  }
  if (!options.access_key_id.empty()) {
    add(kKeyId, options.access_key_id);
    add(kSecret, options.secret_access_key);
    if (!options.session_token.empty()) add(kToken, options.session_token);
  }
  return text;
}

StatusOr<S3Options> TaskS3Options(std::string_view text,
                                  const std::string& name,
                                  const GetEnv& getenv) {
  std::map<std::string, std::string, std::less<>> file;
  size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(start, end - start);
    start = end + 1;
    if (l.empty() || l.front() == '#') continue;
    const size_t eq = l.find('=');
    const std::string_view key = l.substr(0, eq);
    if (eq == std::string_view::npos ||
        !(key == kEndpoint || key == kRegion || key == kPathStyle ||
          key == kProfile || IsCredentialName(key))) {
      return InvalidArgumentError(
          StrCat(name, ":", line,
                 ": expected NAME=value with NAME one of AWS_ENDPOINT_URL, "
                 "AWS_REGION, DTF_S3_PATH_STYLE, AWS_PROFILE, "
                 "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                 "AWS_SESSION_TOKEN"));
    }
    file[std::string(key)] = std::string(l.substr(eq + 1));
  }
  const bool keys = file.contains(kKeyId);
  const GetEnv lookup = [&](const char* var) -> const char* {
    if (auto it = file.find(std::string_view(var)); it != file.end()) {
      return it->second.c_str();
    }
    // The file's access key comes with its own secret and token.
    if (keys && IsCredentialName(var)) return nullptr;
    return getenv(var);
  };
  StatusOr<S3Options> options = S3OptionsFromEnvironment(lookup);
  if (!options.ok()) return Annotate(options.status(), name);
  if (auto it = file.find(kEndpoint); it != file.end()) {
    options->endpoint = it->second;
  }
  if (auto it = file.find(kRegion); it != file.end() && !it->second.empty()) {
    options->region = it->second;
  }
  if (auto it = file.find(kPathStyle); it != file.end()) {
    options->path_style = it->second == "true";
  }
  return options;
}

Status ConfigureStorageFromTaskFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text,
                       ReadPrivateFile(path, launch::kMaxS3CredentialsBytes));
  DTF_ASSIGN_OR_RETURN(const S3Options options,
                       TaskS3Options(text, path, [](const char* name) {
                         return std::getenv(name);
                       }));
  ConfigureStorage(options);
  return OkStatus();
}

Status PrepareTaskStorage(launch::PlanRequest* request) {
  DTF_ASSIGN_OR_RETURN(const JobFile job,
                       LoadJobFile(request->job, request->overrides.sets));
  if (!request->profile.s3.present &&
      !JobUsesS3(job, request->overrides.metrics_out)) {
    return OkStatus();
  }
  return PrepareTaskS3(request->profile, &request->s3_credentials,
                       &request->s3_variables);
}

Status PrepareTaskS3(const launch::Profile& profile, std::string* file_text,
                     std::vector<std::string>* variables) {
  DTF_ASSIGN_OR_RETURN(const S3Options options,
                       LauncherS3Options(profile, [](const char* name) {
                         return std::getenv(name);
                       }));
  for (const std::string* value :
       {&options.access_key_id, &options.secret_access_key,
        &options.session_token, &options.region, &options.endpoint}) {
    if (value->find_first_of("\r\n") != std::string::npos) {
      return InvalidArgumentError(
          "the S3 settings (credentials, region or endpoint) hold a line "
          "break; a run's tasks cannot be given them");
    }
  }
  ConfigureStorage(options);
  *file_text = TaskS3FileText(options, profile.s3, variables);
  return OkStatus();
}

}  // namespace dtf::cli
