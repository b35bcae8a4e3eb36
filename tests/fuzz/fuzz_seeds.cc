// Writes seed corpora for the fuzz targets (scripts/fuzz.sh), made by dtf's
// own encoders from the first rows of a CSV file (the sample data):
//   OUT/example_fuzz/row-N.pb      serialized tf.train.Example messages
//   OUT/record_reader_fuzz/*.seed  TFRecord files as record_reader_fuzz reads
//                                  them: the file as it is, and after a first
//                                  byte choosing none, gzip, zlib or
//                                  detection for the rest
//   OUT/ps_store_fuzz/*.seed       parameter server calls for the job of
//                                  ps_fuzz_job.h after ps_store_fuzz's
//                                  setting byte: good steps, pushes and
//                                  pulls, and the pieces once accepted
//                                  wrongly (rows x cols x 4 wrapping around
//                                  to 0, a sparse piece without ids)
//
//   fuzz_seeds CSV OUT
//
// Columns become int64, float or bytes features by what each value parses
// as, so every Feature kind is there.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/example.h"
#include "lib/data/record_writer.h"
#include "lib/runtime/ps/partition.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "proto/dtf.pb.h"
#include "tests/fuzz/ps_fuzz_job.h"

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

// A gradient of 0.25 for every row of every trainable variable on ps:0 of
// `num_ps` (sparse tables: rows 0 and num_ps).
void AddGradients(const fuzzing::PsFuzzJob& job, int num_ps,
                  google::protobuf::RepeatedPtrField<rpc::TensorPiece>* out) {
  std::vector<rpc::TensorPiece> pieces;
  for (const runtime::VariableSpec& v : job.layout) {
    if (!v.trainable) continue;
    const int64_t cols = runtime::PieceCols(v.shape);
    const std::vector<float> values(size_t(v.shape[0] * cols), 0.25f);
    if (v.sparse) {
      const int64_t ids[] = {0, num_ps};
      runtime::AppendSparsePieces(v.name, v.shape, ids, values.data(), 2, cols,
                                  &pieces);
      continue;
    }
    auto [begin, end] = runtime::Partition{num_ps}.DenseRange(v.shape[0], 0);
    runtime::AppendDensePieces(v.name, v.shape, values.data(), end - begin,
                               cols, begin, &pieces);
  }
  for (rpc::TensorPiece& p : pieces) *out->Add() = std::move(p);
}

void AddPullOfEverything(const fuzzing::PsFuzzJob& job, bool slots,
                         rpc::PullRequest* pull) {
  for (const runtime::VariableSpec& v : job.layout) {
    if (!v.sparse) {
      pull->add_dense(v.name);
      continue;
    }
    rpc::PullRequest::Sparse* s = pull->add_sparse();
    s->set_name(v.name);
    s->add_ids(0);
    s->add_ids(2);
  }
  pull->set_slots(slots);
}

// The first variable of the job with `sparse`, trained.
const runtime::VariableSpec& FirstTrained(const fuzzing::PsFuzzJob& job,
                                          bool sparse) {
  for (const runtime::VariableSpec& v : job.layout) {
    if (v.trainable && v.sparse == sparse && v.shape.size() == 2) return v;
  }
  std::abort();
}

bool WritePsSeeds(const std::string& dir) {
  const fuzzing::PsFuzzJob job = fuzzing::LoadPsFuzzJob("async");
  // ps_store_fuzz's setting byte, then the message.
  auto write = [&](const std::string& name, uint8_t setting,
                   const google::protobuf::MessageLite& m) {
    return WriteAll(dir + name + ".seed",
                    std::string(1, char(setting)) + m.SerializeAsString());
  };
  rpc::StepMessage step;
  step.mutable_push()->set_worker(0);
  AddPullOfEverything(job, false, step.mutable_pull());
  step.mutable_pull()->set_min_step(1);
  AddGradients(job, 1, step.mutable_gradients());
  rpc::StepMessage step2 = step;
  step2.clear_gradients();
  AddGradients(job, 2, step2.mutable_gradients());
  rpc::PushMessage push;
  push.mutable_header()->set_worker(1);
  AddGradients(job, 1, push.mutable_gradients());
  rpc::PullRequest pull;
  AddPullOfEverything(job, true, &pull);
  // A dense piece of about 2^62 rows from row about 2^62, holding nothing:
  // rows x cols x 4 wraps around to 0.
  rpc::StepMessage overflow;
  overflow.mutable_push()->set_worker(0);
  {
    const runtime::VariableSpec& v = FirstTrained(job, false);
    rpc::TensorPiece* p = overflow.add_gradients();
    p->set_name(v.name);
    for (const int64_t d : v.shape) p->add_shape(d);
    p->set_rows(int64_t{1} << 62);
    p->set_row_offset((int64_t{1} << 62) + 1);
  }
  // A sparse piece of two rows without their ids, after a good piece.
  rpc::PushMessage no_ids;
  no_ids.mutable_header()->set_worker(0);
  AddGradients(job, 1, no_ids.mutable_gradients());
  {
    const runtime::VariableSpec& v = FirstTrained(job, true);
    rpc::TensorPiece* p = no_ids.add_gradients();
    p->set_name(v.name);
    for (const int64_t d : v.shape) p->add_shape(d);
    p->set_rows(2);
    p->set_values(
        std::string(size_t(2 * runtime::PieceCols(v.shape) * 4), '\0'));
  }
  return write("step-async", 0, step) && write("step-sync", 4, step) &&
         write("step-sync-2ps-2workers", 4 | 8 | 32, step2) &&
         write("push-async", 1, push) && write("push-sync", 5, push) &&
         write("push-async-fresh", 1 | 64, push) && write("pull", 2, pull) &&
         write("pull-ps1", 2 | 8 | 16, pull) &&
         write("overflow-async", 0, overflow) &&
         write("overflow-sync", 4, overflow) &&
         write("no-ids-async", 1, no_ids) && write("no-ids-sync", 5, no_ids);
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
  fs::create_directories(out + "/ps_store_fuzz");
  if (!WritePsSeeds(out + "/ps_store_fuzz/")) return 1;
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
