// A real S3 server (SeaweedFS) for tests, through tests/testing/s3_server.sh:
// the one the ctest fixture `s3_server` started in build/s3-server when it
// runs, or else one of the test's own, stopped when the object goes away.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "lib/base/s3_options.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::testing {

class S3TestServer {
 public:
  // Re-uses the fixture's server unless `own`; "" from error() on success.
  explicit S3TestServer(bool own = false) {
    const std::string script =
        std::string(DTF_SOURCE_DIR) + "/tests/testing/s3_server.sh";
    const std::string shared = std::string(DTF_BINARY_DIR) + "/s3-server";
    if (!own && Run(script + " alive " + shared) == 0) {
      dir_ = shared;
    } else {
      temp_ = std::make_unique<TempDir>("dtf_s3");
      dir_ = temp_->path();
      owned_ = true;
      // The server goes with this process should it crash.
      if (Run(script + " start " + dir_ + " " + DTF_BINARY_DIR + " " +
              std::to_string(::getpid()) + " >/dev/null") != 0) {
        error_ = "cannot start the S3 server (see " + dir_ + "/weed.log)";
        return;
      }
    }
    std::ifstream env(dir_ + "/env");
    std::string line;
    while (std::getline(env, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = line.substr(0, eq), value = line.substr(eq + 1);
      if (name == "AWS_ENDPOINT_URL") options_.endpoint = value;
      if (name == "AWS_ACCESS_KEY_ID") options_.access_key_id = value;
      if (name == "AWS_SECRET_ACCESS_KEY") options_.secret_access_key = value;
      if (name == "AWS_REGION") options_.region = value;
    }
    options_.path_style = true;
    options_.max_attempts = 3;
    options_.initial_backoff_ms = 50;
    options_.connect_timeout_ms = 2000;
    options_.stall_timeout_s = 10;
    if (options_.endpoint.empty()) error_ = "no endpoint in " + dir_ + "/env";
  }
  ~S3TestServer() {
    if (owned_) Stop();
  }
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;

  const std::string& error() const { return error_; }
  // The server's endpoint and admin credentials, with quick retries.
  const S3Options& options() const { return options_; }
  // Starts a stopped server of the test's own again, on its ports and data.
  bool Restart() {
    return owned_ && Run(std::string(DTF_SOURCE_DIR) +
                         "/tests/testing/s3_server.sh start " + dir_ + " " +
                         DTF_BINARY_DIR + " " + std::to_string(::getpid()) +
                         " >/dev/null") == 0;
  }
  // Kills the server (only one of the test's own).
  void Stop() {
    if (!owned_) return;
    Run(std::string(DTF_SOURCE_DIR) + "/tests/testing/s3_server.sh stop " +
        dir_);
  }

 private:
  static int Run(const std::string& command) {
    return std::system(command.c_str());
  }

  std::unique_ptr<TempDir> temp_;
  std::string dir_;
  bool owned_ = false;
  std::string error_;
  S3Options options_;
};

}  // namespace dtf::testing
