// What dtf says before CLI11 parses: a word that is no command or flag is
// named with the nearest one ("did you mean 'launch'?"), and `dtf help
// [COMMAND...]` stands for `dtf [COMMAND...] --help`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "lib/base/status.h"

namespace dtf::cli {

// The number of single-character insertions, deletions, substitutions and
// swaps of neighbours that turn `a` into `b`.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, when it is close enough to be what was
// meant (a typo or a unique prefix); "" otherwise.
std::string Suggest(std::string_view word,
                    const std::vector<std::string>& candidates);

// Walks `args` (argv without the program name) through `app`'s tree and
// returns InvalidArgument naming the first word that is no command or flag
// of the command it follows, with a suggestion, or the command made of
// commands (dtf pack) that was given none. Values of flags and positional
// arguments are skipped; nothing after "--" is looked at.
Status CheckArgs(CLI::App* app, const std::vector<std::string>& args);

// When `args` is `help [COMMAND...]`, the same with "--help" in place of
// "help" at the end: what CLI11 then parses. Otherwise `args` unchanged.
std::vector<std::string> RewriteHelp(const std::vector<std::string>& args);

}  // namespace dtf::cli
