// dtf inspect: validate TFRecord files and print their Examples.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/flags.h"
#include "lib/base/strings.h"
#include "lib/data/example.h"
#include "lib/data/record_reader.h"
#include "lib/data/record_stats.h"

namespace dtf::cli {
namespace {

struct InspectFlags {
  std::vector<std::string> files;
  int64_t limit = -1;
  bool stats = false;
  bool json = false;
  std::string compression = "auto";
};

Status RunInspect(const InspectFlags& f, Context* ctx) {
  RecordReaderOptions ro;
  if (f.compression == "auto") {
    ro.detect_compression = true;
  } else {
    DTF_ASSIGN_OR_RETURN(ro.compression, ParseCompression(f.compression));
  }
  RecordStats stats;
  int64_t printed = 0;
  std::string record, line;
  Example example;
  for (const std::string& path : f.files) {
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                         RecordReader::Open(path, ro));
    while (true) {
      if (ctx->cancel && ctx->cancel->load()) {
        return CancelledError("interrupted");
      }
      uint64_t offset = reader->offset();
      DTF_ASSIGN_OR_RETURN(bool more, reader->ReadRecord(&record));
      if (!more) break;
      Status st = DecodeExample(record, &example);
      if (!st.ok()) {
        return DataLossError(
            StrCat(path, ": record at offset ", offset,
                   " is not a tf.train.Example: ", st.message()));
      }
      if (f.stats) {
        stats.Add(example);
      } else if (f.limit < 0 || printed < f.limit) {
        line = ExampleToJson(example);
        line.push_back('\n');
        std::fwrite(line.data(), 1, line.size(), stdout);
        ++printed;
      }
    }
  }
  if (f.stats) {
    std::string out = f.json ? stats.ToJson() + "\n" : stats.ToTable();
    std::fputs(out.c_str(), stdout);
  }
  // RunDtf flushes stdout and reports a failed write.
  return OkStatus();
}

}  // namespace

void SetupInspect(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* sub = app->add_subcommand(
      "inspect",
      "Validate every checksum of TFRecord files and print their Examples "
      "as JSON lines");
  sub->add_option("--limit", f->limit,
                  "Print at most N records (all are still validated)")
      ->check(IntAtLeast<int64_t>(0));
  sub->add_flag("--stats", f->stats,
                "Print per-feature statistics instead of records");
  sub->add_flag("--json", f->json, "With --stats: print them as JSON");
  sub->add_option("--compression", f->compression,
                  "auto (default: from the file's first bytes), none, gzip "
                  "or zlib")
      ->check(CLI::IsMember({"auto", "none", "gzip", "zlib"}));
  sub->add_option("files", f->files, "TFRecord files")->required();
  sub->callback([f, ctx] { ctx->status = RunInspect(*f, ctx); });
}

}  // namespace dtf::cli
