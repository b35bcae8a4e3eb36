// The S3 settings of a dtf process, read as the AWS tools and TensorFlow
// read them: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL
// (TensorFlow's S3_ENDPOINT and S3_USE_HTTPS), AWS_PROFILE with
// ~/.aws/credentials and ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE,
// AWS_CONFIG_FILE). A custom endpoint is addressed path-style.
#pragma once

#include <functional>
#include <string>

#include "lib/base/s3_options.h"
#include "lib/base/status.h"

namespace dtf::cli {

// `getenv` looks a variable up (nullptr when unset). An AWS_PROFILE that
// names no profile in either file is an error naming the profile and the
// files.
StatusOr<S3Options> S3OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// Reads the settings and hands them to the storage seam
// (lib/base/storage.h); called once by main. A bad setting fails only the
// s3:// reads and writes, with its message.
void ConfigureStorageFromEnvironment();

}  // namespace dtf::cli
