// Writes seed corpora for the fuzz targets (scripts/fuzz.sh), made by dtf's
// own encoders from the first rows of a CSV file (the sample data):
//   OUT/example_fuzz/row-N.pb      serialized tf.train.Example messages
//   OUT/record_reader_fuzz/*.seed  TFRecord files as record_reader_fuzz reads
//                                  them: the file as it is, and after a first
//                                  byte choosing none, gzip, zlib or
//                                  detection for the rest
//
//   fuzz_seeds CSV OUT
//
// Columns become int64, float or bytes features by what each value parses
// as, so every Feature kind is there.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/example.h"
#include "lib/data/record_writer.h"

namespace dtf {
namespace {

constexpr int kRows = 16;

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

Feature ToFeature(const std::string& value) {
  Feature f;
  const char* end = value.data() + value.size();
  int64_t i = 0;
  float x = 0;
  if (!value.empty() && std::from_chars(value.data(), end, i).ptr == end) {
    f.kind = Feature::Kind::kInt64;
    f.int64_list = {i};
  } else if (!value.empty() &&
             std::from_chars(value.data(), end, x).ptr == end) {
    f.kind = Feature::Kind::kFloat;
    f.float_list = {x};
  } else {
    f.kind = Feature::Kind::kBytes;
    f.bytes_list = {value};
  }
  return f;
}

bool WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return bool(out);
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seeds CSV OUT\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string out = argv[2];
  fs::create_directories(out + "/example_fuzz");
  fs::create_directories(out + "/record_reader_fuzz");
  std::ifstream csv(argv[1]);
  std::string line;
  if (!std::getline(csv, line)) {
    std::fprintf(stderr, "fuzz_seeds: %s: cannot read a header\n", argv[1]);
    return 1;
  }
  const std::vector<std::string> header = Split(line);
  std::vector<std::string> records;
  while (records.size() < kRows && std::getline(csv, line)) {
    const std::vector<std::string> fields = Split(line);
    Example e;
    for (size_t i = 0; i < fields.size() && i < header.size(); ++i) {
      e.features.emplace_back(header[i], ToFeature(fields[i]));
    }
    records.push_back(EncodeExample(e));
  }
  for (size_t i = 0; i < records.size() && i < 4; ++i) {
    if (!WriteAll(out + "/example_fuzz/row-" + std::to_string(i) + ".pb",
                  records[i])) {
      return 1;
    }
  }
  const struct {
    const char* name;
    Compression compression;
    char prefix;  // record_reader_fuzz: the first byte & 3 picks the mode
  } kinds[] = {{"none", Compression::kNone, 0},
               {"gzip", Compression::kGzip, 1},
               {"zlib", Compression::kZlib, 2},
               {"detect", Compression::kGzip, 3}};
  for (const auto& kind : kinds) {
    RecordWriterOptions options;
    options.compression = kind.compression;
    std::string bytes;
    RecordWriter writer(NewStringWritableFile(&bytes, "seed"), options);
    for (const std::string& r : records) {
      if (!writer.WriteRecord(r).ok()) return 1;
    }
    if (const Status closed = writer.Close(); !closed.ok()) {
      std::fprintf(stderr, "fuzz_seeds: %s\n", closed.ToString().c_str());
      return 1;
    }
    const std::string dir = out + "/record_reader_fuzz/";
    if (kind.compression == Compression::kNone &&
        !WriteAll(dir + "plain.seed", bytes)) {
      return 1;
    }
    if (!WriteAll(dir + kind.name + ".seed",
                  std::string(1, kind.prefix) + bytes)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace dtf

int main(int argc, char** argv) { return dtf::Main(argc, argv); }
