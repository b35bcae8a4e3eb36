#include "lib/launch/run_registry.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void MakeRun(const dtf::testing::TempDir& dir, const std::string& id,
             int64_t started_ms) {
  const std::string run_dir = dir.Join(id);
  std::filesystem::create_directories(run_dir);
  dtf::testing::WriteFile(run_dir + "/" + kPlanFile, "{}");
  RunRecord r;
  r.run_id = id;
  r.started_ms = started_ms;
  ASSERT_TRUE(WriteRunRecord(run_dir, r).ok());
}

TEST(RunRegistry, ListsRunsByStartTimeAndFindsThem) {
  dtf::testing::TempDir dir;
  MakeRun(dir, "20260101-120000-bbbb", 1000);
  MakeRun(dir, "20260101-120000-aaaa", 2000);
  MakeRun(dir, "20250101-090000-cccc", 500);
  std::filesystem::create_directories(dir.Join("not-a-run"));
  StatusOr<std::vector<std::string>> runs = ListRuns(dir.path());
  ASSERT_TRUE(runs.ok());
  EXPECT_THAT(*runs, ElementsAre("20250101-090000-cccc", "20260101-120000-bbbb",
                                 "20260101-120000-aaaa"));
  EXPECT_EQ(*FindRunDir(dir.path(), ""), dir.Join("20260101-120000-aaaa"));
  EXPECT_EQ(*FindRunDir(dir.path(), "2025"), dir.Join("20250101-090000-cccc"));
  EXPECT_EQ(FindRunDir(dir.path(), "2026").status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<std::string> missing = FindRunDir(dir.path(), "1999");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()), HasSubstr("20260101-120000-aaaa"));
}

TEST(RunRegistry, NoRunsIsNotFound) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> none = FindRunDir(dir.Join("absent"), "");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(none.status()), HasSubstr("dtf launch"));
}

TEST(RunRegistry, RecordsRoundTrip) {
  dtf::testing::TempDir dir;
  RunRecord r;
  r.run_id = "x";
  r.state = RunState::kFailed;
  r.exit_code = 3;
  r.message = "task ps:0 failed";
  r.started_ms = 12;
  r.ended_ms = 34;
  r.supervisor = {4321, 99};
  r.detached = true;
  r.tasks.push_back({"ps:0", {100, 7}, "127.0.0.1:5", TaskState::kFailed});
  ASSERT_TRUE(WriteRunRecord(dir.path(), r).ok());
  EXPECT_THAT(dtf::testing::ReadFile(dir.Join("tasks.json")),
              HasSubstr("\"pgid\": 100"));
  StatusOr<RunRecord> back = ReadRunRecord(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->exit_code, 3);
  EXPECT_EQ(back->ended_ms, 34);
  EXPECT_EQ(back->supervisor.pid, 4321);
  EXPECT_TRUE(back->detached);
  ASSERT_EQ(back->tasks.size(), 1u);
  EXPECT_EQ(back->tasks[0].process.start_ticks, 7u);
  EXPECT_EQ(back->tasks[0].address, "127.0.0.1:5");
  // Only a Slurm run has a job; the others' records do not mention one.
  EXPECT_EQ(back->backend.count("slurm_job"), 0u);
  EXPECT_THAT(dtf::testing::ReadFile(dir.Join("tasks.json")),
              ::testing::Not(HasSubstr("slurm_job")));
  r.backend["slurm_job"] = "1234.0";
  ASSERT_TRUE(WriteRunRecord(dir.path(), r).ok());
  EXPECT_EQ(ReadRunRecord(dir.path())->backend.at("slurm_job"), "1234.0");

  ExitRecord e{"ps:0", TaskState::kLost, std::nullopt, 0, 5};
  ASSERT_TRUE(WriteExitRecord(dir.Join("exit.json"), e).ok());
  StatusOr<std::optional<ExitRecord>> exit =
      ReadExitRecord(dir.Join("exit.json"));
  ASSERT_TRUE(exit.ok() && exit->has_value());
  EXPECT_FALSE((*exit)->exit_code.has_value());
  EXPECT_FALSE(ReadExitRecord(dir.Join("none.json"))->has_value());
  dtf::testing::WriteFile(dir.Join("bad.json"), "{");
  EXPECT_EQ(ReadExitRecord(dir.Join("bad.json")).status().code(),
            StatusCode::kDataLoss);
}

TEST(RunId, FormatAndShape) {
  EXPECT_TRUE(LooksLikeRunId(FormatRunId(0, 0xab1f)));
  EXPECT_THAT(FormatRunId(0, 0xab1f), ::testing::EndsWith("-ab1f"));
  StatusOr<std::string> id = NewRunId();
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(LooksLikeRunId(*id)) << *id;
  EXPECT_FALSE(LooksLikeRunId("20260101-120000-ABCD"));
  EXPECT_FALSE(LooksLikeRunId("worker:1"));
  StatusOr<std::string> a = RandomHex(32), b = RandomHex(32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

TEST(LineTail, HandsOutCompleteLinesOnce) {
  dtf::testing::TempDir dir;
  const std::string path = dir.Join("log");
  LineTail tail(path);
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  EXPECT_EQ(tail.Poll(collect), 0u);  // no file yet
  dtf::testing::WriteFile(path, "one\ntw");
  EXPECT_EQ(tail.Poll(collect), 1u);
  dtf::testing::WriteFile(path, "one\ntwo\nthr");
  tail.Poll(collect);
  EXPECT_THAT(lines, ElementsAre("one", "two"));
  tail.Poll(collect, /*flush=*/true);
  EXPECT_THAT(lines, ElementsAre("one", "two", "thr"));
}

TEST(LineTail, LastLines) {
  dtf::testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "line " + std::to_string(i) + "\n";
  dtf::testing::WriteFile(dir.Join("log"), text);
  EXPECT_THAT(LastLines(dir.Join("log"), 2),
              ElementsAre("line 9998", "line 9999"));
  EXPECT_TRUE(LastLines(dir.Join("none"), 5).empty());
}

}  // namespace
}  // namespace dtf::launch
