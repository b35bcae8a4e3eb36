#include "cmd/usage.h"

#include <memory>

#include "cmd/app.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::cli {
namespace {

using ::testing::HasSubstr;

TEST(EditDistance, CountsEditsAndSwaps) {
  EXPECT_EQ(EditDistance("launch", "launch"), 0u);
  EXPECT_EQ(EditDistance("lanch", "launch"), 1u);
  EXPECT_EQ(EditDistance("luanch", "launch"), 1u);  // a swap
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(Suggest, ATypoOrAUniquePrefix) {
  const std::vector<std::string> commands = {"launch", "logs", "status", "stop",
                                             "gen-records"};
  EXPECT_EQ(Suggest("lanch", commands), "launch");
  EXPECT_EQ(Suggest("stauts", commands), "status");
  EXPECT_EQ(Suggest("gen", commands), "gen-records");
  EXPECT_EQ(Suggest("gen-record", commands), "gen-records");
  // Too far, too short, or a prefix of two: nothing.
  EXPECT_EQ(Suggest("xyzzy", commands), "");
  EXPECT_EQ(Suggest("s", commands), "");
  EXPECT_EQ(Suggest("sta", {"status", "stats"}), "");
  EXPECT_EQ(Suggest("--jsn", {"--json", "--help"}), "--json");
  EXPECT_EQ(Suggest("-x", {"-f", "-h"}), "");
}

TEST(CheckArgs, NamesTheFirstUnknownWord) {
  Context ctx;
  std::unique_ptr<CLI::App> app = BuildApp(&ctx);
  EXPECT_TRUE(CheckArgs(app.get(), {"train", "--steps", "10"}).ok());
  EXPECT_TRUE(CheckArgs(app.get(), {"train", "--steps=10", "--quiet"}).ok());
  // A value that looks like a flag is the flag's.
  EXPECT_TRUE(CheckArgs(app.get(), {"serve", "--index", "-1"}).ok());
  // Nothing after "--" is looked at.
  EXPECT_TRUE(
      CheckArgs(app.get(), {"task", "exec", "--dir", "d", "--", "--x"}).ok());
  const Status command = CheckArgs(app.get(), {"trian"});
  EXPECT_EQ(command.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(command), HasSubstr("unknown command 'trian'; did you "
                                          "mean 'train'?"));
  EXPECT_THAT(Message(CheckArgs(app.get(), {"pack"})),
              HasSubstr("'dtf pack' needs a command: env, image, zip"));
  EXPECT_TRUE(CheckArgs(app.get(), {"pack", "--help"}).ok());
  const Status flag = CheckArgs(app.get(), {"train", "--step", "3"});
  EXPECT_THAT(Message(flag), HasSubstr("unknown flag '--step' for 'dtf "
                                       "train'; did you mean '--steps'?"));
}

TEST(RewriteHelp, HelpCommandIsCommandHelp) {
  EXPECT_EQ(RewriteHelp({"help", "train"}),
            (std::vector<std::string>{"train", "--help"}));
  EXPECT_EQ(RewriteHelp({"help"}), (std::vector<std::string>{"--help"}));
  EXPECT_EQ(RewriteHelp({"train", "help"}),
            (std::vector<std::string>{"train", "help"}));
}

}  // namespace
}  // namespace dtf::cli
