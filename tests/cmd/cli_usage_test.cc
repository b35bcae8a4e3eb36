// The dtf binary when a user gets something wrong: unknown commands and
// flags, bad numbers, help, manual pages, a full stdout, output paths that
// are not regular files, exit codes.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code = -1;
  std::string out, err;
};

class CliUsageTest : public ::testing::Test {
 protected:
  // Runs `env dtf <args>` through the shell in dir_, its stdout to `out`
  // (out.txt, or /dev/full to see a write fail).
  Result Run(const std::string& args, const std::string& env = "",
             const std::string& out = "out.txt") {
    Write("out.txt", "");
    const std::string cmd = "cd '" + dir_.string() + "' && " + env + " '" +
                            DTF_BINARY + "' " + args + " >" + out +
                            " 2>err.txt </dev/null";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = dtf::testing::ReadFile((dir_ / "out.txt").string());
    r.err = dtf::testing::ReadFile((dir_ / "err.txt").string());
    return r;
  }

  void Write(const std::string& name, const std::string& contents) {
    dtf::testing::WriteFile((dir_ / name).string(), contents);
  }

  // A job whose label is text ("cat", "dog", "bird"), its records and a
  // model trained for a few steps, in dir_/job.
  void TrainTextLabelModel() {
    std::string csv = "x,y,animal\n";
    for (int i = 0; i < 120; ++i) {
      const double x = (i % 21 - 10) / 10.0, y = (i % 7 - 3) / 3.0;
      csv += std::to_string(x) + "," + std::to_string(y) + "," +
             (x > 0.3    ? "cat"
              : x < -0.3 ? "dog"
                         : "bird") +
             "\n";
    }
    Write("animals.csv", csv);
    Result r = Run("init job --from-csv animals.csv --label animal");
    ASSERT_EQ(r.code, 0) << r.err;
    r = Run("gen-records --job job/dtf.toml");
    ASSERT_EQ(r.code, 0) << r.err;
    r = Run("train --job job/dtf.toml --steps 3 --no-eval --quiet");
    ASSERT_EQ(r.code, 0) << r.err;
  }

  dtf::testing::TempDir temp_{"dtf_cli_usage_test"};
  fs::path dir_ = temp_.path();
};

constexpr char kPredict[] =
    "predict --model job/out/model --input 'job/records/eval/*'";

TEST_F(CliUsageTest, UnknownCommandIsNamedWithASuggestion) {
  Result r = Run("lanch");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'lanch'; did you mean "
                               "'launch'?"));
  EXPECT_THAT(r.err, HasSubstr("dtf help"));
  r = Run("pack evn");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'evn' for 'dtf pack'; did "
                               "you mean 'env'?"));
  // Nothing near: no suggestion.
  r = Run("xyzzy");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'xyzzy'"));
  EXPECT_THAT(r.err, Not(HasSubstr("did you mean")));
}

TEST_F(CliUsageTest, UnknownFlagIsNamedWithASuggestion) {
  // Before "files is required": the typo is what the user needs to hear.
  Result r = Run("inspect --jsn");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag '--jsn' for 'dtf inspect'; did "
                               "you mean '--json'?"));
  r = Run("launch --dry-run --profle local");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean '--profile'?"));
  // A flag's value is not taken for a flag or a command.
  r = Run("launch --dry-run --set train.steps=3 --set data.shards=2 --json", "",
          "/dev/null");
  EXPECT_THAT(r.err, Not(HasSubstr("unknown")));
}

TEST_F(CliUsageTest, HelpPrintsACommandsHelp) {
  Result r = Run("help train");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--steps"));
  EXPECT_EQ(r.out, Run("train --help").out);
  r = Run("help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("gen-records"));
  r = Run("help pack env");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("pack env"));
  r = Run("help tran");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'train'?"));
}

TEST_F(CliUsageTest, HelpManShowsThePageBesideTheBinary) {
  // A stand-in for man(1) that prints the page it was given.
  fs::create_directory(dir_ / "bin");
  Write("bin/man", "#!/bin/sh\necho \"page: $1\"\nhead -1 \"$1\"\n");
  ::chmod((dir_ / "bin/man").c_str(), 0755);
  const std::string path = "PATH='" + (dir_ / "bin").string() + "':$PATH";
  const fs::path man_dir =
      (fs::path(DTF_BINARY).parent_path() / ".." / "share" / "man")
          .lexically_normal();
  Result r = Run("help --man train", path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("page: " + (man_dir / "man1/dtf-train.1").string() +
                        "\n.TH DTF-TRAIN 1"));
  r = Run("help --man", path);
  EXPECT_THAT(r.out, HasSubstr("man1/dtf.1\n.TH DTF 1"));
  r = Run("help train --man", path);
  EXPECT_THAT(r.out, HasSubstr("man1/dtf-train.1\n"));
  r = Run("help --man dtf.toml", path);
  EXPECT_THAT(r.out, HasSubstr("man5/dtf.toml.5\n"));
  r = Run("help --man lanch", path);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'launch'?"));
  // Every page of the source tree is there, as the build copied it.
  for (const auto& e :
       fs::directory_iterator(fs::path(DTF_SOURCE_DIR) / "man")) {
    const std::string name = e.path().filename().string();
    const std::string section = name.substr(name.rfind('.') + 1);
    EXPECT_EQ(
        dtf::testing::ReadFile((man_dir / ("man" + section) / name).string()),
        dtf::testing::ReadFile(e.path().string()))
        << name;
  }
}

TEST_F(CliUsageTest, InstalledPagesAreFoundBesideTheInstalledBinary) {
  if (std::system("command -v cmake >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "cmake is not on PATH";
  }
  const fs::path prefix = dir_ / "prefix";
  const std::string install = "cmake --install '" +
                              std::string(DTF_BINARY_DIR) + "' --prefix '" +
                              prefix.string() + "' >/dev/null";
  ASSERT_EQ(std::system(install.c_str()), 0);
  EXPECT_TRUE(fs::exists(prefix / "share/man/man1/dtf.1"));
  EXPECT_TRUE(fs::exists(prefix / "share/man/man1/dtf-launch.1"));
  EXPECT_TRUE(fs::exists(prefix / "share/man/man5/dtf.toml.5"));
  fs::create_directory(dir_ / "bin");
  Write("bin/man", "#!/bin/sh\necho \"page: $1\"\n");
  ::chmod((dir_ / "bin/man").c_str(), 0755);
  const std::string cmd = "cd '" + dir_.string() + "' && PATH='" +
                          (dir_ / "bin").string() + "':$PATH '" +
                          (prefix / "bin/dtf").string() +
                          "' help --man launch >out.txt 2>err.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0)
      << dtf::testing::ReadFile((dir_ / "err.txt").string());
  EXPECT_EQ(
      dtf::testing::ReadFile((dir_ / "out.txt").string()),
      "page: " + (prefix / "share/man/man1/dtf-launch.1").string() + "\n");
}

TEST_F(CliUsageTest, BadNumbersReadWell) {
  Result r = Run("train --steps abc");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--steps: 'abc' is not an integer"));
  EXPECT_LT(r.err.size(), 200u) << r.err;
  r = Run("train --steps 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--steps: must be at least 1, got '0'"));
  r = Run("train --steps 99999999999999999999");
  EXPECT_THAT(r.err, HasSubstr("must be at most 9223372036854775807"));
  r = Run("predict --model m --input x --threads 1.5");
  EXPECT_THAT(r.err, HasSubstr("--threads: '1.5' is not an integer"));
  r = Run("launch --dry-run --ps 0");
  EXPECT_THAT(r.err, HasSubstr("--ps: must be between 1 and 1000, got '0'"));
  r = Run("stop --grace soon");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--grace: 'soon' is not a number"));
  r = Run("doctor --timeout 0.5");
  EXPECT_THAT(r.err,
              HasSubstr("--timeout: must be between 1 and 600, got '0.5'"));
}

TEST_F(CliUsageTest, AFullStdoutExits3) {
  Write("dtf.toml", "");
  Write("schema.toml",
        "[schema]\n[[schema.columns]]\nname = \"a\"\ntype = \"int\"\n");
  Write("in.csv", "a\n1\n2\n");
  Result r = Run("gen-records --schema schema.toml --out rec --json in.csv", "",
                 "/dev/full");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("<stdout>"));
  for (const char* args :
       {"inspect rec/part-00000-of-00001.tfrecord", "doctor", "doctor --json",
        "launch --dry-run", "help train", "--version", "init demo"}) {
    r = Run(args, "", "/dev/full");
    EXPECT_EQ(r.code, 3) << args << ": " << r.err;
  }
}

TEST_F(CliUsageTest, DoctorJsonForALocalProfile) {
  Write("dtf.toml", "");
  Result r = Run("doctor --json", "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("{\"profile\": \"local\", "));
  EXPECT_THAT(r.out, HasSubstr("\"backend\": \"local\", \"ok\": true, "
                               "\"gpus\": [], \"gpu_error\": \""));
  EXPECT_THAT(r.out, HasSubstr("\"missing_gpus\": \"\"}\n"));
}

TEST_F(CliUsageTest, PredictNamesMappedClassesAndChecksItsOutput) {
  TrainTextLabelModel();
  Result r = Run(kPredict);
  ASSERT_EQ(r.code, 0) << r.err;
  // Each line's name is the one the label map gives its index ("bird" = 0,
  // "cat" = 1, "dog" = 2, as dtf init wrote it).
  const std::regex field("\"class\":([0-9]+),\"class_name\":\"([a-z]+)\"");
  const char* names[] = {"bird", "cat", "dog"};
  int lines = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), field), end;
       it != end; ++it, ++lines) {
    const int index = std::stoi((*it)[1].str());
    ASSERT_LT(index, 3) << it->str();
    EXPECT_EQ((*it)[2].str(), names[index]) << it->str();
  }
  EXPECT_EQ(lines, std::count(r.out.begin(), r.out.end(), '\n'));
  EXPECT_GT(lines, 0);
  Result csv = Run(std::string(kPredict) + " --format csv");
  EXPECT_THAT(csv.out, HasSubstr("p0,p1,p2,class,class_name\n"));
  EXPECT_THAT(csv.out, ::testing::ContainsRegex(",[0-2],(bird|cat|dog)\n"));

  // A full stdout: exit 3, not 0 with part of the output.
  r = Run(kPredict, "", "/dev/full");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("<stdout>"));
}

TEST_F(CliUsageTest, PredictOutputWritesThroughLinksAndRefusesDevices) {
  TrainTextLabelModel();
  const std::string expected = Run(kPredict).out;
  ASSERT_FALSE(expected.empty());
  // A symlink: its target gets the predictions, the link stays.
  Write("real.jsonl", "old\n");
  fs::create_symlink("real.jsonl", dir_ / "link.jsonl");
  Result r = Run(std::string(kPredict) + " --output link.jsonl");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.jsonl"));
  EXPECT_EQ(dtf::testing::ReadFile((dir_ / "real.jsonl").string()), expected);
  // A dangling one: its target is made.
  fs::create_symlink("made.jsonl", dir_ / "dangling.jsonl");
  r = Run(std::string(kPredict) + " --output dangling.jsonl");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling.jsonl"));
  EXPECT_EQ(dtf::testing::ReadFile((dir_ / "made.jsonl").string()), expected);
  // A FIFO and a device are refused, named, and left as they were.
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  r = Run(std::string(kPredict) + " --output fifo");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--output fifo: a FIFO, not a regular file"));
  EXPECT_TRUE(fs::is_fifo(dir_ / "fifo"));
  fs::create_symlink("/dev/full", dir_ / "to-full");
  r = Run(std::string(kPredict) + " --output to-full");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--output to-full: a character device"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "to-full"));
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  // /dev/stdout is a link, written through to what stdout is: here the
  // test's out.txt, a regular file (a pipe or a terminal is refused like
  // the FIFO above); the link itself is never replaced.
  r = Run(std::string(kPredict) + " --output /dev/stdout");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  EXPECT_TRUE(fs::is_symlink("/dev/stdout"));
  // Nothing half-written beside them.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr(".tmp")));
  }
  // train --metrics-out: the same, and refused before training.
  r = Run("train --job job/dtf.toml --steps 1 --no-eval --metrics-out fifo");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--metrics-out fifo: a FIFO"));
  EXPECT_THAT(r.err, Not(HasSubstr("step")));
  r =
      Run("train --job job/dtf.toml --steps 4 --no-eval --quiet "
          "--metrics-out link.jsonl");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.jsonl"));
  EXPECT_THAT(dtf::testing::ReadFile((dir_ / "real.jsonl").string()),
              HasSubstr("\"steps\""));
}

TEST_F(CliUsageTest, AJobAskingForAMissingGpuExits3) {
  TrainTextLabelModel();
  // No device visible: the environment lacks what the job asks for (exit 3),
  // not a host that could not be reached (4).
  Result r = Run("train --job job/dtf.toml --steps 1 --no-eval --device cuda",
                 "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("CUDA"));
}

TEST_F(CliUsageTest, LaunchSetKeysAreCheckedByADryRun) {
  TrainTextLabelModel();
  Result r = Run("launch --job job/dtf.toml --dry-run --set train.epoch=3");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--set train.epoch=3: train.epoch: unknown key "
                               "(did you mean epochs?)"));
  r = Run("launch --job job/dtf.toml --dry-run --set train.mode=asyn");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("did you mean async?"));
  r = Run("launch --job job/dtf.toml --dry-run --set train.batch_size=many");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("train.batch_size"));
  r = Run("launch --job job/dtf.toml --dry-run --set train.batch_size=8");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "job/.dtf"));
}

TEST_F(CliUsageTest, InterruptingALocalLaunchStopsEveryTaskWithinTheGrace) {
  TrainTextLabelModel();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::chdir(dir_.c_str());
    ::freopen("out.txt", "w", stdout);
    ::freopen("err.txt", "w", stderr);
    ::setenv("NO_COLOR", "1", 1);
    // Training that would run for hours (the steps replace the job's
    // epochs).
    ::execl(DTF_BINARY, DTF_BINARY, "launch", "--job", "job/dtf.toml",
            "--grace", "30", "--set", "train.steps=1000000000",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto err = [&] {
    return dtf::testing::ReadFile((dir_ / "err.txt").string());
  };
  // Every task trains: the workers report steps.
  const auto started = std::chrono::steady_clock::now();
  while (err().find("[worker:1] step") == std::string::npos &&
         std::chrono::steady_clock::now() - started <
             std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_THAT(err(), HasSubstr("[worker:1] step"));
  const auto interrupted = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const auto took = std::chrono::steady_clock::now() - interrupted;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  // Each task went on its SIGTERM: nothing waited out the 30 s grace or
  // was killed.
  EXPECT_LT(took, std::chrono::seconds(15));
  EXPECT_THAT(err(), HasSubstr("interrupted; stopped every task"));
  EXPECT_THAT(err(), Not(HasSubstr("killed")));
}

}  // namespace
