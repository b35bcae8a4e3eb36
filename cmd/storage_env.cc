#include "cmd/storage_env.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "lib/base/storage.h"

namespace dtf::cli {
namespace {

using Section = std::map<std::string, std::string>;

std::string Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(begin, end - begin + 1));
}

// The [section] of an INI file as the AWS tools write them; found is false
// when the file or the section is missing.
Section ReadIniSection(const std::string& path, const std::string& section,
                       bool* found) {
  Section out;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    const std::string text = Trim(line);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    if (text.front() == '[' && text.back() == ']') {
      inside =
          Trim(std::string_view(text).substr(1, text.size() - 2)) == section;
      if (inside) *found = true;
      continue;
    }
    const size_t eq = text.find('=');
    if (!inside || eq == std::string::npos) continue;
    out[absl::AsciiStrToLower(Trim(std::string_view(text).substr(0, eq)))] =
        Trim(std::string_view(text).substr(eq + 1));
  }
  return out;
}

std::string Get(const std::function<const char*(const char*)>& getenv,
                const char* name) {
  const char* value = getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

StatusOr<S3Options> S3OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  S3Options options;
  const std::string home = Get(getenv, "HOME");
  std::string credentials_file = Get(getenv, "AWS_SHARED_CREDENTIALS_FILE");
  if (credentials_file.empty() && !home.empty()) {
    credentials_file = home + "/.aws/credentials";
  }
  std::string config_file = Get(getenv, "AWS_CONFIG_FILE");
  if (config_file.empty() && !home.empty()) config_file = home + "/.aws/config";
  const std::string named_profile = Get(getenv, "AWS_PROFILE");
  const std::string profile = named_profile.empty() ? "default" : named_profile;
  bool found = false;
  Section creds = ReadIniSection(credentials_file, profile, &found);
  Section config = ReadIniSection(
      config_file, profile == "default" ? profile : "profile " + profile,
      &found);
  if (!found && !named_profile.empty()) {
    return InvalidArgumentError(
        absl::StrCat("AWS_PROFILE=", named_profile, ": no profile [",
                     named_profile, "] in ", credentials_file, " or [profile ",
                     named_profile, "] in ", config_file));
  }
  auto pick = [&](const char* key) {
    return creds.contains(key) ? creds[key] : config[key];
  };

  options.access_key_id = Get(getenv, "AWS_ACCESS_KEY_ID");
  if (!options.access_key_id.empty()) {
    options.secret_access_key = Get(getenv, "AWS_SECRET_ACCESS_KEY");
    options.session_token = Get(getenv, "AWS_SESSION_TOKEN");
  } else {
    options.access_key_id = pick("aws_access_key_id");
    options.secret_access_key = pick("aws_secret_access_key");
    options.session_token = pick("aws_session_token");
  }
  if (!options.access_key_id.empty() && options.secret_access_key.empty()) {
    return InvalidArgumentError(absl::StrCat(
        "AWS access key ", options.access_key_id,
        " has no secret (set AWS_SECRET_ACCESS_KEY or aws_secret_access_key "
        "in ",
        credentials_file, ")"));
  }

  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (options.region = Get(getenv, name); !options.region.empty()) break;
  }
  if (options.region.empty()) options.region = pick("region");
  if (options.region.empty()) options.region = "us-east-1";

  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (options.endpoint = Get(getenv, name); !options.endpoint.empty()) break;
  }
  if (options.endpoint.empty()) options.endpoint = pick("endpoint_url");
  if (options.endpoint.empty()) {
    // TensorFlow's: a host[:port], https unless S3_USE_HTTPS=0.
    const std::string tf = Get(getenv, "S3_ENDPOINT");
    if (!tf.empty()) {
      options.endpoint =
          tf.find("://") != std::string::npos
              ? tf
              : absl::StrCat(
                    Get(getenv, "S3_USE_HTTPS") == "0" ? "http://" : "https://",
                    tf);
    }
  }
  options.path_style = !options.endpoint.empty();
  return options;
}

void ConfigureStorageFromEnvironment() {
  StatusOr<S3Options> options = S3OptionsFromEnvironment(
      [](const char* name) { return std::getenv(name); });
  if (!options.ok()) {
    S3Options broken;
    broken.config_error = std::string(Message(options.status()));
    ConfigureStorage(broken);
    return;
  }
  ConfigureStorage(*options);
}

}  // namespace dtf::cli
