#include "cmd/usage.h"

#include <algorithm>
#include <cctype>

#include "lib/base/strings.h"

namespace dtf::cli {
namespace {

std::vector<CLI::App*> SubcommandsOf(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

bool HasPositionals(CLI::App* app) {
  for (const CLI::Option* o : app->get_options()) {
    if (o->get_positional()) return true;
  }
  return false;
}

std::string CommandPath(CLI::App* app) {
  std::string path;
  for (CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    path = path.empty() ? a->get_name() : StrCat(a->get_name(), " ", path);
  }
  return path;
}

std::string DidYouMean(std::string_view word,
                       const std::vector<std::string>& candidates) {
  const std::string best = Suggest(word, candidates);
  return best.empty() ? std::string() : StrCat("; did you mean '", best, "'?");
}

Status UnknownFlag(CLI::App* app, std::string_view flag) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return InvalidArgumentError(StrCat("unknown flag '", flag, "' for '",
                                     CommandPath(app), "'",
                                     DidYouMean(flag, names)));
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string Suggest(std::string_view word,
                    const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (best.empty() || d < best_distance) best = c, best_distance = d;
  }
  // Close enough: a third of the word's letters at most (never fewer than
  // one, never more than three), or a unique prefix of a longer name.
  const size_t letters =
      word.size() - std::min(word.find_first_not_of('-'), word.size());
  if (letters < 2) return std::string();
  const size_t limit = std::clamp<size_t>(letters / 3, 1, 3);
  if (!best.empty() && best_distance <= limit) return best;
  std::string prefix_of;
  for (const std::string& c : candidates) {
    if (word.size() >= 3 && c.size() > word.size() &&
        c.compare(0, word.size(), word) == 0) {
      if (!prefix_of.empty()) return std::string();
      prefix_of = c;
    }
  }
  return prefix_of;
}

Status CheckArgs(CLI::App* app, const std::vector<std::string>& args) {
  CLI::App* at = app;
  bool help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    help |= arg == "--help" || arg == "-h";
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const std::string flag = arg.substr(0, arg.find('='));
      const CLI::Option* o = at->get_option_no_throw(flag);
      if (o == nullptr) return UnknownFlag(at, flag);
      // Its value, when it takes one and it is not given after '='.
      if (o->get_expected_min() > 0 && flag.size() == arg.size()) ++i;
      continue;
    }
    if (arg.size() >= 2 && arg[0] == '-' &&
        std::isalpha(static_cast<unsigned char>(arg[1]))) {
      const std::string flag = arg.substr(0, 2);
      const CLI::Option* o = at->get_option_no_throw(flag);
      if (o == nullptr) return UnknownFlag(at, flag);
      if (o->get_expected_min() > 0 && arg.size() == 2) ++i;
      continue;
    }
    const std::vector<CLI::App*> subs = SubcommandsOf(at);
    if (subs.empty()) continue;
    auto sub = std::find_if(subs.begin(), subs.end(),
                            [&](CLI::App* s) { return s->check_name(arg); });
    if (sub != subs.end()) {
      at = *sub;
      continue;
    }
    if (HasPositionals(at)) continue;
    std::vector<std::string> names;
    for (CLI::App* s : subs) names.push_back(s->get_name());
    if (at == app) names.push_back("help");
    return InvalidArgumentError(StrCat(
        "unknown command '", arg, "'",
        at == app ? std::string() : StrCat(" for '", CommandPath(at), "'"),
        DidYouMean(arg, names)));
  }
  // A command made of commands (dtf hosts, dtf pack) given none of them.
  if (at != app && !help && at->get_require_subcommand_min() > 0) {
    std::string names;
    for (CLI::App* s : SubcommandsOf(at)) {
      StrAppend(&names, names.empty() ? "" : ", ", s->get_name());
    }
    return InvalidArgumentError(
        StrCat("'", CommandPath(at), "' needs a command: ", names));
  }
  return OkStatus();
}

std::vector<std::string> RewriteHelp(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "help") return args;
  std::vector<std::string> out(args.begin() + 1, args.end());
  out.push_back("--help");
  return out;
}

}  // namespace dtf::cli
