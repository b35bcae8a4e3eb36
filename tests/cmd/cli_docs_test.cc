// Every subcommand and flag of the dtf command line has its man page entry
// and its bash, zsh and fish completion; every flag a man page documents
// exists. A subcommand's own subcommands (dtf pack env) are documented on
// its page and completed with their own flags.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "gtest/gtest.h"
#include "tests/testing/paths.h"

namespace dtf::cli {
namespace {

std::string Slurp(const std::string& relative) {
  std::ifstream in(std::string(DTF_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative << " is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Command {
  std::string name;                // "" for dtf itself
  std::vector<std::string> flags;  // long names without dashes
  std::vector<Command> subs;       // dtf pack env, zip, list
};

// The command's flags and those of its subcommands.
std::vector<std::string> AllFlags(const Command& c) {
  std::vector<std::string> flags = c.flags;
  for (const Command& sub : c.subs) {
    flags.insert(flags.end(), sub.flags.begin(), sub.flags.end());
  }
  return flags;
}

std::vector<Command> Commands() {
  Context ctx;
  std::unique_ptr<CLI::App> app = BuildApp(&ctx);
  std::vector<Command> out;
  auto flags_of = [](CLI::App* a) {
    std::vector<std::string> flags;
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) flags.push_back(l);
    }
    return flags;
  };
  out.push_back({"", flags_of(app.get()), {}});
  auto all = [](CLI::App*) { return true; };
  for (CLI::App* sub : app->get_subcommands(all)) {
    Command c{sub->get_name(), flags_of(sub), {}};
    for (CLI::App* nested : sub->get_subcommands(all)) {
      c.subs.push_back({nested->get_name(), flags_of(nested), {}});
    }
    out.push_back(std::move(c));
  }
  return out;
}

// In roff, '-' is written '\-'.
std::string Roff(const std::string& s) {
  return std::regex_replace(s, std::regex("-"), "\\-");
}

TEST(CliDocs, TreeHasSubcommands) {
  std::vector<Command> commands = Commands();
  ASSERT_GE(commands.size(), 3u);
  EXPECT_EQ(commands[1].name, "gen-records");
}

TEST(CliDocs, EveryCommandAndFlagHasAManPageEntry) {
  std::string top = Slurp("man/dtf.1");
  for (const Command& c : Commands()) {
    if (c.name.empty()) {
      for (const std::string& f : c.flags) {
        EXPECT_NE(top.find(Roff("--" + f)), std::string::npos)
            << "man/dtf.1 lacks --" << f;
      }
      continue;
    }
    EXPECT_NE(top.find(Roff("dtf " + c.name)), std::string::npos)
        << "man/dtf.1 does not list " << c.name;
    std::string page = Slurp("man/dtf-" + c.name + ".1");
    for (const std::string& f : AllFlags(c)) {
      if (f == "help") continue;  // every command takes it; dtf.1 says so
      EXPECT_NE(page.find(Roff("--" + f)), std::string::npos)
          << "man/dtf-" << c.name << ".1 lacks --" << f;
    }
    for (const Command& sub : c.subs) {
      EXPECT_NE(page.find(Roff("dtf " + c.name + " " + sub.name)),
                std::string::npos)
          << "man/dtf-" << c.name << ".1 does not show " << sub.name;
    }
  }
}

TEST(CliDocs, ManPagesDocumentNoFlagThatDoesNotExist) {
  for (const Command& c : Commands()) {
    if (c.name.empty()) continue;
    std::string page = Slurp("man/dtf-" + c.name + ".1");
    const std::vector<std::string> flags = AllFlags(c);
    std::set<std::string> real(flags.begin(), flags.end());
    std::regex flag(R"(\\-\\-([a-z][a-z_\\-]*[a-z]))");
    for (std::sregex_iterator it(page.begin(), page.end(), flag), end;
         it != end; ++it) {
      std::string name =
          std::regex_replace((*it)[1].str(), std::regex(R"(\\-)"), "-");
      EXPECT_TRUE(real.count(name))
          << "man/dtf-" << c.name << ".1 documents --" << name << ", which dtf "
          << c.name << " does not have";
    }
  }
}

TEST(CliDocs, EveryCommandAndFlagHasBashCompletion) {
  std::string bash = Slurp("completions/dtf.bash");
  // The case of `name` and the flags it offers.
  auto expect_case = [&](const std::string& name,
                         const std::vector<std::string>& flags,
                         const std::string& what) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        bash, m, std::regex("\n *" + name + "\\) opts=\"([^\"]*)\"")))
        << "completions/dtf.bash has no case for " << what;
    std::string opts = " " + m[1].str() + " ";
    for (const std::string& f : flags) {
      EXPECT_NE(opts.find(" --" + f + " "), std::string::npos)
          << "completions/dtf.bash lacks " << what << " --" << f;
    }
  };
  for (const Command& c : Commands()) {
    if (c.name.empty()) continue;
    if (c.subs.empty()) {
      expect_case(c.name, c.flags, c.name);
    } else {
      EXPECT_TRUE(std::regex_search(bash, std::regex("\n *" + c.name + "\\)")))
          << "completions/dtf.bash has no case for " << c.name;
      for (const Command& sub : c.subs) {
        std::vector<std::string> flags = sub.flags;
        flags.insert(flags.end(), c.flags.begin(), c.flags.end());
        expect_case(sub.name, flags, c.name + " " + sub.name);
      }
    }
    EXPECT_NE(bash.find("compgen -W \"gen-records"), std::string::npos);
  }
}

TEST(CliDocs, EveryCommandAndFlagHasZshCompletion) {
  std::string zsh = Slurp("completions/_dtf");
  for (const Command& c : Commands()) {
    if (c.name.empty()) continue;
    EXPECT_NE(zsh.find("'" + c.name + ":"), std::string::npos)
        << "completions/_dtf does not describe " << c.name;
    size_t start = zsh.find("(" + c.name + ")");
    ASSERT_NE(start, std::string::npos) << "completions/_dtf: no " << c.name;
    std::string block = zsh.substr(start, zsh.find(";;", start) - start);
    for (const Command& sub : c.subs) {
      EXPECT_NE(block.find(sub.name + "\\:"), std::string::npos)
          << "completions/_dtf does not describe " << c.name << " " << sub.name;
    }
    for (const std::string& f : AllFlags(c)) {
      EXPECT_TRUE(std::regex_search(block, std::regex("'\\*?--" + f + "\\[")))
          << "completions/_dtf lacks " << c.name << " --" << f;
    }
  }
}

TEST(CliDocs, EveryCommandAndFlagHasFishCompletion) {
  std::string fish = Slurp("completions/dtf.fish");
  for (const Command& c : Commands()) {
    if (c.name.empty()) continue;
    EXPECT_NE(fish.find("-a " + c.name + " "), std::string::npos)
        << "completions/dtf.fish does not offer " << c.name;
    for (const std::string& f : c.flags) {
      EXPECT_TRUE(
          std::regex_search(fish, std::regex("__fish_seen_subcommand_from " +
                                             c.name + "' -l " + f + "( |\n)")))
          << "completions/dtf.fish lacks " << c.name << " --" << f;
    }
    for (const Command& sub : c.subs) {
      EXPECT_NE(fish.find("-a " + sub.name + " "), std::string::npos)
          << "completions/dtf.fish does not offer " << c.name << " "
          << sub.name;
      for (const std::string& f : sub.flags) {
        EXPECT_TRUE(std::regex_search(
            fish, std::regex("__fish_seen_subcommand_from " + c.name +
                             "; and __fish_seen_subcommand_from " + sub.name +
                             "' -l " + f + "( |\n)")))
            << "completions/dtf.fish lacks " << c.name << " " << sub.name
            << " --" << f;
      }
    }
  }
}

}  // namespace
}  // namespace dtf::cli
