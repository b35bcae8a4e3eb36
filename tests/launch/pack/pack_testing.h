// Helpers for the pack tests: running a program and reading what it wrote.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/testing/temp_dir.h"

namespace dtf::pack::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs `command` with sh in `dir`, stdout and stderr captured in files there.
inline Result Sh(const std::string& dir, const std::string& command) {
  const std::string cmd =
      "cd '" + dir + "' && (" + command + ") >.out.txt 2>.err.txt </dev/null";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = dtf::testing::ReadFile(dir + "/.out.txt");
  r.err = dtf::testing::ReadFile(dir + "/.err.txt");
  std::remove((dir + "/.out.txt").c_str());
  std::remove((dir + "/.err.txt").c_str());
  return r;
}

}  // namespace dtf::pack::testing
