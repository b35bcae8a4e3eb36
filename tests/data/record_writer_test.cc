#include "lib/data/record_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/crc32c.h"
#include "lib/data/record_format.h"
#include "lib/data/record_reader.h"
#include "tests/data/tf_golden.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

using golden::kTfHelloThenEmpty;

std::vector<std::string> ReadAll(const std::string& path,
                                 Compression compression) {
  RecordReaderOptions options;
  options.compression = compression;
  auto reader = RecordReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> records;
  std::string record;
  while (true) {
    StatusOr<bool> more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    records.push_back(record);
  }
  return records;
}

TEST(RecordFormat, FramedRecordMatchesTensorFlow) {
  std::string framed;
  record_format::AppendFramedRecord("hello", &framed);
  record_format::AppendFramedRecord("", &framed);
  EXPECT_EQ(absl::BytesToHexString(framed), kTfHelloThenEmpty);
}

TEST(RecordFormat, FramedRecordLayout) {
  const std::string data = "some record data";
  std::string framed = "prefix";
  record_format::AppendFramedRecord(data, &framed);
  ASSERT_EQ(framed.size(), 6 + record_format::kOverhead + data.size());
  const std::string record = framed.substr(6);
  EXPECT_EQ(record.substr(0, 8), std::string("\x10\0\0\0\0\0\0\0", 8));
  char header[record_format::kHeaderSize];
  record_format::EncodeHeader(data.size(), header);
  EXPECT_EQ(record.substr(0, 12), std::string(header, sizeof(header)));
  char footer[record_format::kFooterSize];
  record_format::EncodeFooter(data, footer);
  EXPECT_EQ(record.substr(12 + data.size()), std::string(footer, 4));
  EXPECT_EQ(record.substr(12, data.size()), data);
  const uint32_t length_crc = crc32c::Mask(crc32c::Value(record.data(), 8));
  EXPECT_EQ(static_cast<uint8_t>(record[8]), length_crc & 0xff);
  EXPECT_EQ(static_cast<uint8_t>(record[11]), length_crc >> 24);
}

TEST(RecordWriter, BytesMatchTensorFlow) {
  std::string out;
  RecordWriter writer(NewStringWritableFile(&out, "mem"), {});
  ASSERT_TRUE(writer.WriteRecord("hello").ok());
  ASSERT_TRUE(writer.WriteRecord("").ok());
  ASSERT_TRUE(writer.Close().ok());
  EXPECT_EQ(absl::BytesToHexString(out), kTfHelloThenEmpty);
}

TEST(RecordWriter, CountsRecordsAndOffset) {
  std::string out;
  RecordWriter writer(NewStringWritableFile(&out, "mem"), {});
  EXPECT_EQ(writer.records(), 0u);
  EXPECT_EQ(writer.offset(), 0u);
  ASSERT_TRUE(writer.WriteRecord("abc").ok());
  EXPECT_EQ(writer.records(), 1u);
  EXPECT_EQ(writer.offset(), 19u);
  std::string framed;
  record_format::AppendFramedRecord("x", &framed);
  record_format::AppendFramedRecord("yz", &framed);
  ASSERT_TRUE(writer.WriteFramed(framed, 2).ok());
  EXPECT_EQ(writer.records(), 3u);
  EXPECT_EQ(writer.offset(), 19u + 17u + 18u);
  ASSERT_TRUE(writer.Close().ok());
  EXPECT_EQ(out.size(), writer.offset());
}

TEST(RecordWriter, FramedAndRecordByRecordWriteTheSameBytes) {
  std::vector<std::string> records;
  for (size_t n : {size_t{0}, size_t{5}, size_t{300000}, size_t{70000},
                   size_t{1} << 20, size_t{262143}, size_t{262144}}) {
    records.push_back(std::string(n, static_cast<char>('a' + n % 26)));
  }
  std::string one_by_one;
  std::string framed_out;
  RecordWriter a(NewStringWritableFile(&one_by_one, "a"), {});
  RecordWriter b(NewStringWritableFile(&framed_out, "b"), {});
  std::string expected;
  for (const std::string& r : records) {
    ASSERT_TRUE(a.WriteRecord(r).ok());
    std::string framed;
    record_format::AppendFramedRecord(r, &framed);
    ASSERT_TRUE(b.WriteFramed(framed, 1).ok());
    expected += framed;
  }
  ASSERT_TRUE(a.Close().ok());
  ASSERT_TRUE(b.Close().ok());
  EXPECT_TRUE(one_by_one == expected);
  EXPECT_TRUE(framed_out == expected);
  EXPECT_EQ(a.offset(), expected.size());
}

TEST(RecordWriter, RoundTripsEveryCompression) {
  testing::TempDir temp("dtf_record_writer_test");
  const std::string& dir = temp.path();
  std::vector<std::string> records = {"", "one", std::string(500000, 'z')};
  for (int i = 0; i < 5000; ++i)
    records.push_back("record " + std::to_string(i));
  for (Compression c :
       {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string path = dir + "/part-00000-of-00001.tfrecord" +
                             std::string(CompressionSuffix(c));
    RecordWriterOptions options;
    options.compression = c;
    auto writer = RecordWriter::Open(path, options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& r : records) {
      ASSERT_TRUE((*writer)->WriteRecord(r).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
    EXPECT_EQ(ReadAll(path, c), records) << CompressionName(c);
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    if (c == Compression::kNone) {
      EXPECT_EQ(static_cast<uint64_t>(st.st_size), (*writer)->offset());
    } else {
      EXPECT_LT(static_cast<uint64_t>(st.st_size), (*writer)->offset() / 10);
    }
    ::unlink(path.c_str());
  }
  ::rmdir(dir.c_str());
}

TEST(RecordWriter, FlushHandsRecordsToTheOs) {
  testing::TempDir temp("dtf_record_writer_test");
  const std::string path = temp.Join("live.tfrecord");
  auto writer = RecordWriter::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteRecord("one").ok());
  ASSERT_TRUE((*writer)->WriteRecord("two").ok());
  EXPECT_TRUE(ReadAll(path, Compression::kNone).empty());
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(ReadAll(path, Compression::kNone),
            (std::vector<std::string>{"one", "two"}));
  ASSERT_TRUE((*writer)->WriteRecord("three").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAll(path, Compression::kNone),
            (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ((*writer)->Flush().code(), StatusCode::kFailedPrecondition);
}

TEST(RecordWriter, WriteAfterCloseFails) {
  std::string out;
  RecordWriter writer(NewStringWritableFile(&out, "mem"), {});
  ASSERT_TRUE(writer.Close().ok());
  EXPECT_TRUE(writer.Close().ok());
  Status status = writer.WriteRecord("late");
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("mem"));
  EXPECT_EQ(writer.WriteFramed("", 0).code(), StatusCode::kFailedPrecondition);
}

TEST(RecordWriter, BadLevelFailsBeforeCreatingTheFile) {
  testing::TempDir temp("dtf_record_writer_test");
  const std::string& dir = temp.path();
  const std::string path = dir + "/out.tfrecord.gz";
  RecordWriterOptions options;
  options.compression = Compression::kGzip;
  options.compression_level = 12;
  auto writer = RecordWriter::Open(path, options);
  EXPECT_EQ(writer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(writer.status().message(), HasSubstr(path));
  EXPECT_NE(::access(path.c_str(), F_OK), 0);

  std::string out;
  RecordWriter direct(NewStringWritableFile(&out, "mem"), options);
  EXPECT_EQ(direct.WriteRecord("x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(direct.Close().code(), StatusCode::kInvalidArgument);
  ::rmdir(dir.c_str());
}

TEST(RecordWriter, MissingDirectoryIsNotFound) {
  auto writer = RecordWriter::Open("/nonexistent-dtf-dir/part-00000.tfrecord");
  EXPECT_EQ(writer.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(writer.status().message(), HasSubstr("/nonexistent-dtf-dir"));
}

TEST(RecordWriter, DiskFullIsResourceExhaustedNamingThePath) {
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    RecordWriterOptions options;
    options.compression = c;
    auto writer = RecordWriter::Open("/dev/full", options);
    if (!writer.ok()) GTEST_SKIP() << writer.status();
    Status status;
    for (int i = 0; i < 100 && status.ok(); ++i) {
      status = (*writer)->WriteRecord(std::string(100000, 'q'));
    }
    if (status.ok()) status = (*writer)->Close();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(status.message(), HasSubstr("/dev/full"));
    EXPECT_EQ((*writer)->WriteRecord("x").code(),
              StatusCode::kResourceExhausted);
  }
}

TEST(RecordWriter, DestructorCompletesTheFile) {
  std::string out;
  {
    RecordWriter writer(NewStringWritableFile(&out, "mem"), {});
    ASSERT_TRUE(writer.WriteRecord("hello").ok());
    ASSERT_TRUE(writer.WriteRecord("").ok());
  }
  EXPECT_EQ(absl::BytesToHexString(out), kTfHelloThenEmpty);
  std::string gz;
  {
    RecordWriterOptions options;
    options.compression = Compression::kGzip;
    RecordWriter writer(NewStringWritableFile(&gz, "mem.gz"), options);
    ASSERT_TRUE(writer.WriteRecord("hello").ok());
  }
  auto reader = RecordReader::Create(NewStringSequentialFile(gz, "mem.gz"),
                                     {.compression = Compression::kGzip});
  ASSERT_TRUE(reader.ok());
  std::string record;
  EXPECT_TRUE(*(*reader)->ReadRecord(&record));
  EXPECT_EQ(record, "hello");
  EXPECT_FALSE(*(*reader)->ReadRecord(&record));
}

}  // namespace
}  // namespace dtf
