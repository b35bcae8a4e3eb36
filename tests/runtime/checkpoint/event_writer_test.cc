#include "lib/runtime/checkpoint/event_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/record_reader.h"
#include "proto/event.pb.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;

std::string Host() {
  char name[HOST_NAME_MAX + 1] = {};
  EXPECT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  return name;
}

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Every event in the file, parsed; fails the test on a bad record.
std::vector<tensorflow::Event> ReadEvents(const std::string& path) {
  std::vector<tensorflow::Event> events;
  auto reader = RecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return events;
  std::string record;
  while (true) {
    StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    tensorflow::Event event;
    EXPECT_TRUE(event.ParseFromString(record)) << path;
    events.push_back(event);
  }
  return events;
}

TEST(EventWriter, FileNameFollowsTensorFlow) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  const double before = Now();
  auto writer = EventWriter::Create(dir.path(), ".v2");
  ASSERT_TRUE(writer.ok()) << writer.status();
  const double after = Now();
  ASSERT_EQ(dir.List().size(), 1u);
  const std::string name = dir.List()[0];
  EXPECT_EQ((*writer)->path(), dir.Join(name));
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      name, m, std::regex(R"(events\.out\.tfevents\.([0-9]{10})\.(.+))")))
      << name;
  const int64_t seconds = std::stoll(m[1].str());
  EXPECT_GE(seconds, static_cast<int64_t>(before));
  EXPECT_LE(seconds, static_cast<int64_t>(after));
  EXPECT_EQ(m[2].str(), Host() + ".v2");
}

TEST(EventWriter, FirstEventIsTheFileVersion) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  const double before = Now();
  auto writer = EventWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  // Create flushes the first event: TensorBoard sees the run at once.
  std::vector<tensorflow::Event> events = ReadEvents((*writer)->path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_GE(events[0].wall_time(), before - 1e-3);
  EXPECT_LE(events[0].wall_time(), Now());
  // The file name holds the same second as the first event.
  EXPECT_THAT((*writer)->path(),
              HasSubstr(StrCat(".tfevents.",
                               static_cast<int64_t>(events[0].wall_time()))));
}

TEST(EventWriter, ScalarsReadBack) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  auto writer = EventWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  EventWriter& w = **writer;
  const double before = Now();
  ASSERT_TRUE(w.AddScalar("loss", 0.75, 1).ok());
  ASSERT_TRUE(w.AddScalar("loss", 0.5, 2).ok());
  ASSERT_TRUE(
      w.AddScalars({{"eval/auc", 0.8125}, {"eval/accuracy", 0.1}}, 2).ok());
  ASSERT_TRUE(w.AddScalar("big_step", -3, int64_t{1} << 40).ok());
  ASSERT_TRUE(w.Close().ok());
  const double after = Now();

  std::vector<tensorflow::Event> events = ReadEvents(w.path());
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].file_version(), EventWriter::kFileVersion);
  struct Want {
    int64_t step;
    std::vector<std::pair<std::string, float>> values;
  };
  const std::vector<Want> want = {
      {1, {{"loss", 0.75f}}},
      {2, {{"loss", 0.5f}}},
      {2, {{"eval/auc", 0.8125f}, {"eval/accuracy", 0.1f}}},
      {int64_t{1} << 40, {{"big_step", -3.0f}}},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    const tensorflow::Event& e = events[i + 1];
    SCOPED_TRACE(i);
    ASSERT_TRUE(e.has_summary());
    EXPECT_EQ(e.step(), want[i].step);
    EXPECT_GE(e.wall_time(), before - 1e-3);
    EXPECT_LE(e.wall_time(), after);
    ASSERT_EQ(e.summary().value_size(),
              static_cast<int>(want[i].values.size()));
    for (size_t j = 0; j < want[i].values.size(); ++j) {
      EXPECT_EQ(e.summary().value(j).tag(), want[i].values[j].first);
      // float, as TensorBoard's simple_value: 0.1 is stored as 0.1f.
      EXPECT_EQ(e.summary().value(j).simple_value(), want[i].values[j].second);
    }
  }
}

TEST(EventWriter, FlushMakesEventsVisible) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  auto writer = EventWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->AddScalar("loss", 1, 1).ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 2u);
}

TEST(EventWriter, DestructorClosesTheFile) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  std::string path;
  {
    auto writer = EventWriter::Create(dir.path());
    ASSERT_TRUE(writer.ok()) << writer.status();
    path = (*writer)->path();
    ASSERT_TRUE((*writer)->AddScalar("loss", 1, 1).ok());
  }
  EXPECT_EQ(ReadEvents(path).size(), 2u);
}

TEST(EventWriter, CreatesMissingDirectories) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  const std::string logdir = dir.Join("run/train");
  auto writer = EventWriter::Create(logdir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_THAT((*writer)->path(), HasSubstr(logdir + "/events.out.tfevents."));
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);
}

TEST(EventWriter, UncreatableDirectoryIsNamed) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  dtf::testing::WriteFile(dir.Join("file"), "x");
  const std::string logdir = dir.Join("file/logs");
  auto writer = EventWriter::Create(logdir);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(Message(writer.status()), HasSubstr(logdir));
}

TEST(EventWriter, BadArgumentsAreInvalid) {
  EXPECT_EQ(EventWriter::Create("").status().code(),
            StatusCode::kInvalidArgument);
  dtf::testing::TempDir dir("dtf_event_writer_test");
  auto bad_suffix = EventWriter::Create(dir.path(), "/x");
  EXPECT_EQ(bad_suffix.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(bad_suffix.status()), HasSubstr("\"/x\""));

  auto writer = EventWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  Status empty_tag = (*writer)->AddScalar("", 1, 7);
  EXPECT_EQ(empty_tag.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(empty_tag), HasSubstr((*writer)->path()));
  EXPECT_THAT(Message(empty_tag), HasSubstr("step 7"));
  EXPECT_EQ((*writer)->AddScalars({}, 7).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->AddScalars({{"a", 1}, {"", 2}}, 7).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE((*writer)->Close().ok());
  // Nothing was written by the failed calls.
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1u);
}

TEST(EventWriter, AddAfterCloseFailsNamingTheFile) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  auto writer = EventWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE((*writer)->Close().ok());
  Status late = (*writer)->AddScalar("loss", 1, 1);
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(late), HasSubstr((*writer)->path()));
  EXPECT_EQ((*writer)->Flush().code(), StatusCode::kFailedPrecondition);
}

TEST(EventWriter, ExistingFileIsNotOverwritten) {
  dtf::testing::TempDir dir("dtf_event_writer_test");
  // Occupy the names of the next few seconds.
  const int64_t now = static_cast<int64_t>(Now());
  for (int64_t t = now; t < now + 5; ++t) {
    dtf::testing::WriteFile(
        dir.Join(StrCat("events.out.tfevents.", t, ".", Host(), ".s")), "keep");
  }
  auto writer = EventWriter::Create(dir.path(), ".s");
  EXPECT_EQ(writer.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(Message(writer.status()), HasSubstr(dir.path()));
  for (const std::string& name : dir.List()) {
    EXPECT_EQ(dtf::testing::ReadFile(dir.Join(name)), "keep");
  }
}

}  // namespace
}  // namespace dtf::runtime
