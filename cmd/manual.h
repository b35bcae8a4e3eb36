// dtf's manual pages beside the binary: <prefix>/share/man/man1/dtf*.1 and
// man5/dtf.toml.5, where `cmake --install` puts them for <prefix>/bin/dtf
// and where the build copies them for build/cmd/dtf.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "lib/base/status.h"

namespace dtf::cli {

// <directory of `binary`>/../share/man, normalized.
std::string ManDirFor(const std::string& binary);

// The page for `words` under `man_dir`: [] (and ["help"]) is dtf(1),
// ["train"] dtf-train(1) (["pack", "env"] dtf-pack(1)), ["dtf.toml"]
// dtf.toml(5). InvalidArgument
// when `words` names no command of `app` (with a suggestion); NotFound when
// the page is not there.
StatusOr<std::string> ManPageFor(CLI::App* app, const std::string& man_dir,
                                 const std::vector<std::string>& words);

// Runs `man PAGE` (the page's path) in place of this process; returns only
// when man could not be started (ResourceExhausted naming the page).
Status ExecMan(const std::string& page);

}  // namespace dtf::cli
