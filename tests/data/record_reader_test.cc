#include "lib/data/record_reader.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "lib/data/record_format.h"
#include "lib/data/record_writer.h"
#include "tests/data/tf_golden.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

using golden::kTfHelloThenEmpty;
// Written by TensorFlow 2.21's tf.io.TFRecordWriter: "hello" alone with
// compression_type "GZIP" and "ZLIB".
const char kTfGzipHello[] =
    "1f8b080000000000000363658080579b58ec32527372f277cbcb480200b781300e150000"
    "00";
const char kTfZlibHello[] =
    "789c63658080579b58ec32527372f277cbcb48020029610507";

std::string Hex(const char* hex) { return absl::HexStringToBytes(hex); }

std::string Frame(const std::vector<std::string>& records) {
  std::string out;
  for (const std::string& r : records) {
    record_format::AppendFramedRecord(r, &out);
  }
  return out;
}

std::string Compress(const std::string& data, Compression c) {
  std::string out;
  auto file = NewCompressedWritableFile(NewStringWritableFile(&out, "mem"), c);
  EXPECT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append(data).ok());
  EXPECT_TRUE((*file)->Close().ok());
  return out;
}

std::unique_ptr<RecordReader> Reader(std::string stored,
                                     RecordReaderOptions options = {},
                                     std::string name = "part-00000.tfrecord") {
  auto reader = RecordReader::Create(
      NewStringSequentialFile(std::move(stored), std::move(name)), options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return std::move(reader).value();
}

// Reads every record; the status is the first error, or OK at a clean end.
Status ReadAll(RecordReader& reader, std::vector<std::string>* records) {
  records->clear();
  std::string record;
  while (true) {
    DTF_ASSIGN_OR_RETURN(bool more, reader.ReadRecord(&record));
    if (!more) return OkStatus();
    records->push_back(record);
  }
}

// Returns one byte at a time, to exercise refilling mid-record.
class TrickleFile final : public SequentialFile {
 public:
  explicit TrickleFile(std::string contents) : contents_(std::move(contents)) {}
  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    *bytes_read = n > 0 && pos_ < contents_.size() ? 1 : 0;
    if (*bytes_read) scratch[0] = contents_[pos_++];
    return OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  std::string contents_;
  std::string name_ = "trickle";
  size_t pos_ = 0;
};

TEST(RecordReader, ReadsTensorFlowFiles) {
  std::vector<std::string> records;
  auto reader = Reader(Hex(kTfHelloThenEmpty));
  ASSERT_TRUE(ReadAll(*reader, &records).ok());
  EXPECT_EQ(records, (std::vector<std::string>{"hello", ""}));
  EXPECT_EQ(reader->offset(), 37u);

  reader = Reader(Hex(kTfGzipHello), {.compression = Compression::kGzip});
  ASSERT_TRUE(ReadAll(*reader, &records).ok());
  EXPECT_EQ(records, std::vector<std::string>{"hello"});

  reader = Reader(Hex(kTfZlibHello), {.compression = Compression::kZlib});
  ASSERT_TRUE(ReadAll(*reader, &records).ok());
  EXPECT_EQ(records, std::vector<std::string>{"hello"});
}

TEST(RecordReader, EmptyFileIsCleanEnd) {
  auto reader = Reader("");
  std::string record = "untouched";
  StatusOr<bool> more = reader->ReadRecord(&record);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_FALSE(*reader->ReadRecord(&record));
  EXPECT_EQ(record, "untouched");
}

TEST(RecordReader, RoundTripsEveryCompression) {
  std::vector<std::string> expected = {"", "", "x"};
  // Large records straddle and exceed the reader's 256 KiB blocks.
  for (size_t n : {size_t{262144 - 16}, size_t{262144}, size_t{1} << 20,
                   size_t{3} << 20, size_t{100}}) {
    expected.push_back(std::string(n, static_cast<char>('a' + n % 26)));
  }
  for (int i = 0; i < 20000; ++i) {
    expected.push_back("record number " + std::to_string(i));
  }
  for (Compression c :
       {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string stored;
    RecordWriterOptions options;
    options.compression = c;
    RecordWriter writer(NewStringWritableFile(&stored, "mem"), options);
    for (const std::string& r : expected) {
      ASSERT_TRUE(writer.WriteRecord(r).ok());
    }
    ASSERT_TRUE(writer.Close().ok());
    auto reader = Reader(stored, {.compression = c});
    std::vector<std::string> records;
    ASSERT_TRUE(ReadAll(*reader, &records).ok()) << CompressionName(c);
    EXPECT_TRUE(records == expected) << CompressionName(c);
    EXPECT_EQ(reader->offset(), writer.offset());
    EXPECT_EQ(reader->compression(), c);
  }
}

TEST(RecordReader, OffsetIsTheNextRecordsFirstByte) {
  auto reader = Reader(Frame({"abc", "", "defgh"}));
  std::string record;
  EXPECT_EQ(reader->offset(), 0u);
  ASSERT_TRUE(*reader->ReadRecord(&record));
  EXPECT_EQ(reader->offset(), 19u);
  ASSERT_TRUE(*reader->ReadRecord(&record));
  EXPECT_EQ(reader->offset(), 35u);
  ASSERT_TRUE(*reader->ReadRecord(&record));
  EXPECT_EQ(record, "defgh");
  EXPECT_EQ(reader->offset(), 56u);
  EXPECT_FALSE(*reader->ReadRecord(&record));
}

TEST(RecordReader, OneByteReads) {
  const std::vector<std::string> expected = {"first", "", "third record"};
  auto reader =
      RecordReader::Create(std::make_unique<TrickleFile>(Frame(expected)), {});
  ASSERT_TRUE(reader.ok());
  std::vector<std::string> records;
  ASSERT_TRUE(ReadAll(**reader, &records).ok());
  EXPECT_EQ(records, expected);

  reader = RecordReader::Create(std::make_unique<TrickleFile>(Compress(
                                    Frame(expected), Compression::kGzip)),
                                {.compression = Compression::kGzip});
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(ReadAll(**reader, &records).ok());
  EXPECT_EQ(records, expected);
}

TEST(RecordReader, ExactMessageForBadDataChecksum) {
  std::string stored = Frame({std::string(1218, 'p'), std::string(120, 'q')});
  ASSERT_EQ(stored.size(), 1234u + 136u);
  stored[1234 + 12 + 50] ^= 0x04;
  auto reader = Reader(stored);
  std::string record;
  ASSERT_TRUE(*reader->ReadRecord(&record));
  StatusOr<bool> more = reader->ReadRecord(&record);
  EXPECT_EQ(more.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(more.status().message(),
            "part-00000.tfrecord: corrupt record at offset 1234: data "
            "checksum mismatch");
  // The reader does not go on past an error.
  EXPECT_EQ(reader->ReadRecord(&record).status(), more.status());
}

TEST(RecordReader, FlippedBitInEachFieldIsDetected) {
  const std::string good = Frame({"first record", "second record"});
  const size_t second = record_format::kOverhead + 12;
  struct Case {
    size_t byte;
    const char* message;
  };
  const Case cases[] = {
      {second + 0, "length checksum mismatch"},
      {second + 7, "length checksum mismatch"},
      {second + 8, "length checksum mismatch"},
      {second + 11, "length checksum mismatch"},
      {second + 12, "data checksum mismatch"},
      {second + 24, "data checksum mismatch"},
      {second + 25, "data checksum mismatch"},
      {second + 28, "data checksum mismatch"},
  };
  for (const Case& c : cases) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[c.byte] ^= static_cast<char>(1 << bit);
      auto reader = Reader(bad);
      std::string record;
      ASSERT_TRUE(*reader->ReadRecord(&record));
      StatusOr<bool> more = reader->ReadRecord(&record);
      ASSERT_EQ(more.status().code(), StatusCode::kDataLoss)
          << "byte " << c.byte << " bit " << bit;
      EXPECT_THAT(more.status().message(),
                  HasSubstr("corrupt record at offset " +
                            std::to_string(second) + ": " + c.message));
    }
  }
}

TEST(RecordReader, TruncatedAtEveryOffset) {
  const std::vector<std::string> records = {"alpha", "", "gamma ray"};
  const std::string full = Frame(records);
  // Record boundaries: 0, 21, 37, 62.
  const std::vector<size_t> starts = {0, 21, 37};
  const std::vector<size_t> lengths = {5, 0, 9};
  ASSERT_EQ(full.size(), 62u);
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    auto reader = Reader(full.substr(0, cut));
    std::vector<std::string> read;
    Status status = ReadAll(*reader, &read);
    size_t complete = 0;
    while (complete < 3 &&
           (complete + 1 < 3 ? starts[complete + 1] : full.size()) <= cut) {
      ++complete;
    }
    EXPECT_EQ(read.size(), complete) << "cut at " << cut;
    if (complete == 3 || cut == starts[complete]) {
      EXPECT_TRUE(status.ok()) << "cut at " << cut << ": " << status;
      continue;
    }
    ASSERT_EQ(status.code(), StatusCode::kDataLoss) << "cut at " << cut;
    const size_t start = starts[complete];
    const size_t have = cut - start;
    std::string detail;
    if (have < 12) {
      detail =
          "expected a 12-byte header, file ends after " + std::to_string(have);
    } else if (have < 12 + lengths[complete]) {
      detail = "expected " + std::to_string(lengths[complete]) +
               " bytes of data, file ends after " + std::to_string(have - 12);
    } else {
      detail = "expected a 4-byte data checksum, file ends after " +
               std::to_string(have - 12 - lengths[complete]);
    }
    EXPECT_EQ(status.message(),
              "part-00000.tfrecord: truncated record at offset " +
                  std::to_string(start) + " (" + detail + ")")
        << "cut at " << cut;
  }
}

std::string HeaderClaiming(uint64_t length) {
  char header[record_format::kHeaderSize];
  record_format::EncodeHeader(length, header);
  return std::string(header, sizeof(header));
}

TEST(RecordReader, AbsurdLengthIsCorruptNotAllocated) {
  auto reader =
      Reader(Frame({"ok"}) + HeaderClaiming(uint64_t{1} << 62) + "tiny");
  std::string record;
  ASSERT_TRUE(*reader->ReadRecord(&record));
  StatusOr<bool> more = reader->ReadRecord(&record);
  EXPECT_EQ(more.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(
      more.status().message(),
      HasSubstr("corrupt record at offset 18: length 4611686018427387904 "
                "exceeds the maximum record size 2147483648"));

  reader =
      Reader(HeaderClaiming(~uint64_t{0}), {.max_record_size = ~uint64_t{0}});
  EXPECT_EQ(reader->ReadRecord(&record).status().code(), StatusCode::kDataLoss);
}

TEST(RecordReader, LengthUnderTheLimitButBeyondTheFileIsTruncated) {
  // Built with StrCat: GCC 12 at -O2 misreads `std::string + "short"` here
  // as writing past the string (-Warray-bounds).
  auto reader = Reader(StrCat(HeaderClaiming(uint64_t{1} << 30), "short"));
  std::string record;
  StatusOr<bool> more = reader->ReadRecord(&record);
  EXPECT_EQ(more.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(more.status().message(),
              HasSubstr("truncated record at offset 0 (expected 1073741824 "
                        "bytes of data, file ends after 5)"));
}

TEST(RecordReader, MaxRecordSizeOption) {
  const std::string stored = Frame({std::string(100, 'a')});
  std::string record;
  auto reader = Reader(stored, {.max_record_size = 100});
  EXPECT_TRUE(*reader->ReadRecord(&record));
  reader = Reader(stored, {.max_record_size = 99});
  StatusOr<bool> more = reader->ReadRecord(&record);
  EXPECT_EQ(more.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(more.status().message(),
              HasSubstr("length 100 exceeds the maximum record size 99"));
}

TEST(RecordReader, TruncatedGzipStreamIsDataLoss) {
  const std::string stored =
      Compress(Frame({std::string(5000, 'r'), "second"}), Compression::kGzip);
  for (size_t cut :
       {size_t{0}, size_t{5}, stored.size() / 2, stored.size() - 1}) {
    auto reader = Reader(stored.substr(0, cut),
                         {.compression = Compression::kGzip}, "part.gz");
    std::vector<std::string> records;
    Status status = ReadAll(*reader, &records);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << "cut at " << cut;
    EXPECT_THAT(status.message(),
                HasSubstr("part.gz: compressed stream truncated at byte " +
                          std::to_string(cut)));
    EXPECT_THAT(status.message(), HasSubstr("reading the record at offset"));
  }
}

TEST(RecordReader, CorruptGzipStreamIsDataLoss) {
  std::string stored =
      Compress(Frame({std::string(5000, 'r'), "second"}), Compression::kGzip);
  stored[stored.size() - 8] ^= 0x10;
  auto reader = Reader(stored, {.compression = Compression::kGzip}, "part.gz");
  std::vector<std::string> records;
  Status status = ReadAll(*reader, &records);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              HasSubstr("part.gz: corrupt compressed stream"));
}

TEST(RecordReader, UncompressedFileReadAsGzipIsDataLoss) {
  auto reader = Reader(Frame({"plain"}), {.compression = Compression::kGzip});
  std::string record;
  EXPECT_EQ(reader->ReadRecord(&record).status().code(), StatusCode::kDataLoss);
}

TEST(RecordReader, DetectsCompression) {
  const std::vector<std::string> expected = {"a", std::string(40000, 'b'), ""};
  const std::string plain = Frame(expected);
  for (Compression c :
       {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string stored = c == Compression::kNone ? plain : Compress(plain, c);
    auto reader = Reader(stored, {.compression = Compression::kGzip,
                                  .detect_compression = true});
    EXPECT_EQ(reader->compression(), c);
    std::vector<std::string> records;
    ASSERT_TRUE(ReadAll(*reader, &records).ok()) << CompressionName(c);
    EXPECT_EQ(records, expected);
  }
  auto reader = Reader("", {.detect_compression = true});
  std::string record;
  EXPECT_FALSE(*reader->ReadRecord(&record));
  reader = Reader("abc", {.detect_compression = true});
  EXPECT_EQ(reader->ReadRecord(&record).status().code(), StatusCode::kDataLoss);
}

TEST(RecordReader, OpensFilesAndDetectsCompression) {
  testing::TempDir temp("dtf_record_reader_test");
  const std::string& dir = temp.path();
  const std::string path = dir + "/part-00000-of-00001.tfrecord.zz";
  RecordWriterOptions write_options;
  write_options.compression = Compression::kZlib;
  auto writer = RecordWriter::Open(path, write_options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->WriteRecord("from disk").ok());
  ASSERT_TRUE((*writer)->Close().ok());

  auto reader = RecordReader::Open(path, {.detect_compression = true});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), path);
  EXPECT_EQ((*reader)->compression(), Compression::kZlib);
  std::vector<std::string> records;
  ASSERT_TRUE(ReadAll(**reader, &records).ok());
  EXPECT_EQ(records, std::vector<std::string>{"from disk"});

  ::unlink(path.c_str());
  auto missing = RecordReader::Open(path);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
}

TEST(RecordReader, ReusesTheCallersString) {
  auto reader = Reader(Frame({std::string(1000, 'x'), "y"}));
  std::string record;
  ASSERT_TRUE(*reader->ReadRecord(&record));
  const size_t capacity = record.capacity();
  ASSERT_TRUE(*reader->ReadRecord(&record));
  EXPECT_EQ(record, "y");
  EXPECT_EQ(record.capacity(), capacity);
}

}  // namespace
}  // namespace dtf
