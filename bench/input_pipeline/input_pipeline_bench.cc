// Throughput of the training input pipeline on UCI Adult records written by
// dtf's own gen-records, beside its peers on the same records in the same
// run: reading the TFRecord frames alone (the I/O + checksum ceiling) and
// decoding each record into an Example (the object-per-record path).
//
//   input_pipeline_bench [--csv adult.data] [--epochs N] [--work DIR]
//
// With the input cache (InputPipelineOptions::cache) only the first epoch
// reads and parses; the rows with "cache" show what the epochs cost then.
//
// The records go to DIR/adult-records (removed afterwards); DIR defaults to
// a new directory under the system's temporary directory.
//
// Prints records/s per configuration; the single-thread rows are the
// per-core figures.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/example.h"
#include "lib/data/gen_records.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/record_reader.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

const std::pair<const char*, ValueType> kAdultColumns[] = {
    {"age", ValueType::kInt},
    {"workclass", ValueType::kString},
    {"fnlwgt", ValueType::kInt},
    {"education", ValueType::kString},
    {"education_num", ValueType::kInt},
    {"marital_status", ValueType::kString},
    {"occupation", ValueType::kString},
    {"relationship", ValueType::kString},
    {"race", ValueType::kString},
    {"gender", ValueType::kString},
    {"capital_gain", ValueType::kInt},
    {"capital_loss", ValueType::kInt},
    {"hours_per_week", ValueType::kInt},
    {"native_country", ValueType::kString},
    {"income", ValueType::kString}};

StatusOr<std::vector<std::string>> WriteAdultRecords(const std::string& csv,
                                                     const std::string& out) {
  Schema schema;
  for (auto [name, type] : kAdultColumns) {
    ColumnSpec c;
    c.name = name;
    c.type = type;
    schema.columns.push_back(c);
  }
  schema.missing_values = {"", "?"};
  schema.label = LabelSpec{"income", {{"<=50K", 0}, {">50K", 1}}};
  GenRecordsOptions g;
  g.inputs = {csv};
  g.header = false;
  g.schema = schema;
  g.out_dir = out;
  g.shards = 4;
  g.overwrite = true;
  DTF_ASSIGN_OR_RETURN(GenRecordsResult result, GenRecords(g));
  std::vector<std::string> paths;
  for (const auto& o : result.outputs) paths.push_back(o.path);
  return paths;
}

std::vector<FeatureParseSpec> AdultFeatures() {
  std::vector<FeatureParseSpec> specs;
  for (auto [name, type] : kAdultColumns) {
    const bool is_int =
        type == ValueType::kInt || std::string_view(name) == "income";
    FeatureParseSpec f = FixedLenFeature(
        name, is_int ? FeatureType::kInt64 : FeatureType::kBytes);
    if (!is_int) f.default_bytes = {"?"};
    specs.push_back(f);
  }
  return specs;
}

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Runs `fn` (which returns the records it handled, or -1 on error) and
// prints its rate per second of wall time and per second of CPU time (all
// threads of the process), the per-core figure on a shared machine.
void Measure(const char* what, const std::function<int64_t()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  const int64_t records = fn();
  const double cpu = CpuSeconds() - cpu_start;
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (records < 0) {
    std::printf("%-42s failed\n", what);
    return;
  }
  std::printf("%-42s %9lld %7.3f %11.0f %7.3f %11.0f\n", what,
              static_cast<long long>(records), s, records / s, cpu,
              records / cpu);
}

int64_t ReadFrames(const std::vector<std::string>& paths, int64_t epochs,
                   bool decode) {
  std::string record;
  Example example;
  int64_t n = 0;
  for (int64_t e = 0; e < epochs; ++e) {
    for (const std::string& path : paths) {
      auto reader = RecordReader::Open(path);
      if (!reader.ok()) return -1;
      for (;;) {
        StatusOr<bool> more = (*reader)->ReadRecord(&record);
        if (!more.ok()) return -1;
        if (!*more) break;
        if (decode && !DecodeExample(record, &example).ok()) return -1;
        ++n;
      }
    }
  }
  return n;
}

int64_t RunPipeline(InputPipelineOptions o) {
  auto p = InputPipeline::Create(std::move(o));
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", std::string(Message(p.status())).c_str());
    return -1;
  }
  Batch b;
  int64_t n = 0;
  for (;;) {
    StatusOr<bool> more = (*p)->Next(&b);
    if (!more.ok()) {
      std::fprintf(stderr, "%s\n", std::string(Message(more.status())).c_str());
      return -1;
    }
    if (!*more) return n;
    n += b.rows;
  }
}

int Main(int argc, char** argv) {
  std::string csv = std::string(DTF_SHARED_DIR) + "/data/adult/adult.data";
  int64_t epochs = 40;
  std::string work = (fs::temp_directory_path() /
                      StrCat("dtf-input-pipeline-bench-", getpid()))
                         .string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--csv") {
      csv = argv[i + 1];
    } else if (flag == "--epochs") {
      epochs = std::atoll(argv[i + 1]);
    } else if (flag == "--work") {
      work = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const std::string out = (fs::path(work) / "adult-records").string();
  auto paths = WriteAdultRecords(csv, out);
  if (!paths.ok()) {
    std::fprintf(stderr, "%s\n", std::string(Message(paths.status())).c_str());
    return 1;
  }
  std::printf("Adult: %s, 4 shards, %lld epochs, 15 features, batch 256\n",
              csv.c_str(), static_cast<long long>(epochs));
  ReadFrames(*paths, 1, false);  // warm the page cache
  std::printf("%-42s %9s %7s %11s %7s %11s\n", "", "records", "wall s",
              "records/s", "cpu s", "records/cpu-s");

  Measure("frames only (RecordReader)",
          [&] { return ReadFrames(*paths, epochs, false); });
  Measure("RecordReader + DecodeExample (peer)",
          [&] { return ReadFrames(*paths, epochs, true); });
  InputPipelineOptions o;
  o.files = *paths;
  o.features = AdultFeatures();
  o.batch_size = 256;
  o.epochs = epochs;
  o.prefetch = 0;
  Measure("pipeline, 1 thread (prefetch 0)", [&] { return RunPipeline(o); });
  o.shuffle_buffer_size = 10000;
  Measure("pipeline, 1 thread, shuffle 10000", [&] { return RunPipeline(o); });
  // The input cache: the first epoch reads and parses, the others gather
  // the cached rows (in memory, or from a spill file with a budget of 0).
  o.cache.enabled = true;
  Measure("pipeline, 1 thread, shuffle 10000, cache",
          [&] { return RunPipeline(o); });
  o.cache.memory_budget_bytes = 0;
  o.cache.spill_dir = work;
  Measure("  the same, cache spilled to disk", [&] { return RunPipeline(o); });
  o.cache = InputCacheOptions();
  o.shuffle_buffer_size = 0;
  o.prefetch = 4;
  Measure("pipeline, background thread (prefetch 4)",
          [&] { return RunPipeline(o); });
  fs::remove_all(out);
  std::error_code ignored;
  fs::remove(work, ignored);  // only when empty
  return 0;
}

}  // namespace
}  // namespace dtf

int main(int argc, char** argv) { return dtf::Main(argc, argv); }
