#include "lib/data/gen_records.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_join.h"
#include "farmhash.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/csv_text.h"
#include "lib/data/record_format.h"
#include "lib/data/row_encoder.h"
#include "lib/data/shard_set.h"

namespace dtf {
namespace {

class Router;

Status GenRecordsInterrupted() {
  return CancelledError("interrupted; no records were written");
}

// One chunk of one input, with what its rows need to know.
struct Task {
  int64_t seq = 0;
  CsvChunk chunk;
  const RowEncoder* encoder = nullptr;
  const Router* router = nullptr;
  // Global data-row index of the input's first data row.
  int64_t input_row_base = 0;
  bool header = false;
};

// Buffers one encoding thread reuses from chunk to chunk.
struct WorkerState {
  std::vector<ShardBatch> batches;
  RowEncoder::Scratch scratch;
  std::string route_scratch;
  CsvRow row;
};

// A rejected row, ordered by where it stood in the input.
struct Rejection {
  int64_t seq;
  RejectedRow row;
};

// Picks each row's split and shard.
class Router {
 public:
  Router(const GenRecordsOptions& o, int key_index)
      : shards_(o.shards), key_index_(key_index) {
    double sum = 0;
    for (const SplitFraction& s : o.splits) {
      sum += s.fraction;
      cumulative_.push_back(sum);
    }
  }

  // REQUIRES: row has the encoder's fields().
  int Sink(const CsvRow& row, int64_t data_row, std::string* scratch) const {
    int split = 0;
    if (cumulative_.size() > 1) {
      scratch->clear();
      for (std::string_view f : row.fields) {
        scratch->append(f);
        scratch->push_back('\x1f');
      }
      uint64_t h = util::Fingerprint64(scratch->data(), scratch->size());
      double u = static_cast<double>(h >> 11) * 0x1.0p-53;
      while (split + 1 < static_cast<int>(cumulative_.size()) &&
             u >= cumulative_[split]) {
        ++split;
      }
    }
    int shard;
    if (key_index_ >= 0) {
      std::string_view key = row.fields[key_index_];
      shard = static_cast<int>(util::Fingerprint64(key.data(), key.size()) %
                               static_cast<uint64_t>(shards_));
    } else {
      shard = static_cast<int>(data_row % shards_);
    }
    return split * shards_ + shard;
  }

 private:
  int shards_;
  int key_index_;
  std::vector<double> cumulative_;
};

class Pipeline {
 public:
  Pipeline(const GenRecordsOptions& options, ShardSet* shards)
      : options_(options), shards_(shards) {}

  Status Run(GenRecordsResult* result);

 private:
  Status PrepareInput(const std::string& path, int64_t* row_base);
  Status Submit(Task task);
  void Worker();
  // Encodes one chunk and appends its records to every sink, in order.
  Status Process(Task& task, WorkerState* state);
  void Fail(Status status, int64_t seq);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  bool cancelled() const {
    return options_.cancel != nullptr &&
           options_.cancel->load(std::memory_order_relaxed);
  }
  Status InferSchema(CsvChunker& chunker, const std::string& path,
                     std::vector<std::string>* header,
                     std::deque<CsvChunk>* held);

  const GenRecordsOptions& options_;
  ShardSet* shards_;
  Schema schema_;
  std::vector<std::unique_ptr<RowEncoder>> encoders_;
  std::vector<std::unique_ptr<Router>> routers_;
  int64_t next_seq_ = 0;
  uint64_t bytes_done_ = 0;
  uint64_t bytes_total_ = 0;

  std::mutex mu_;  // guards the queue, the first error and the rejections
  std::condition_variable queue_cv_;
  std::deque<Task> queue_;
  bool closed_ = false;
  std::atomic<bool> failed_{false};
  Status error_;
  int64_t error_seq_ = INT64_MAX;
  std::vector<Rejection> rejected_;
  WorkerState inline_state_;  // for threads == 1
  std::atomic<int64_t> rows_read_{0}, rows_written_{0}, rows_skipped_{0};
};

void Pipeline::Fail(Status status, int64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The earliest chunk's error wins, so the message does not depend on
    // thread timing.
    if (seq < error_seq_) {
      error_ = std::move(status);
      error_seq_ = seq;
    }
  }
  failed_ = true;
  shards_->Abort();
  queue_cv_.notify_all();
}

Status Pipeline::Process(Task& task, WorkerState* state) {
  const int sinks = shards_->size();
  std::vector<ShardBatch>& batches = state->batches;
  batches.resize(sinks);
  for (ShardBatch& b : batches) b.Clear();
  std::vector<Rejection> rejected;
  CsvRow& row = state->row;
  CsvChunkParser parser(task.chunk, options_.csv);
  int64_t record = task.chunk.first_record;
  int64_t read = 0, written = 0;
  const int64_t header_rows = task.header ? 1 : 0;
  while (true) {
    DTF_ASSIGN_OR_RETURN(bool more, parser.Next(&row));
    if (!more) break;
    if (record++ < header_rows) continue;
    ++read;
    if ((read & 1023) == 0 && cancelled()) return GenRecordsInterrupted();
    auto reject = [&](Status st) -> Status {
      if (options_.on_error == OnError::kFail) return st;
      rejected.push_back(
          {task.seq, {task.chunk.source, row.line, std::string(Message(st))}});
      return OkStatus();
    };
    if (Status st = task.encoder->CheckFields(row, task.chunk.source);
        !st.ok()) {
      DTF_RETURN_IF_ERROR(reject(std::move(st)));
      continue;
    }
    int64_t data_row = task.input_row_base + record - 1 - header_rows;
    const int sink = task.router->Sink(row, data_row, &state->route_scratch);
    // Another process writes that shard (GenRecordsOptions::part).
    if (!shards_->Owns(sink)) continue;
    ShardBatch& batch = batches[sink];
    // The Example is encoded in place, between its header and footer.
    std::string& out = batch.framed;
    const size_t start = out.size();
    out.resize(start + record_format::kHeaderSize);
    Status st =
        task.encoder->Encode(row, task.chunk.source, &state->scratch, &out);
    if (!st.ok()) {
      out.resize(start);
      DTF_RETURN_IF_ERROR(reject(std::move(st)));
      continue;
    }
    const size_t length = out.size() - start - record_format::kHeaderSize;
    out.resize(out.size() + record_format::kFooterSize);
    char* framed = out.data() + start;
    record_format::EncodeHeader(length, framed);
    record_format::EncodeFooter(
        std::string_view(framed + record_format::kHeaderSize, length),
        framed + record_format::kHeaderSize + length);
    batch.lengths.push_back(
        static_cast<uint32_t>(length + record_format::kOverhead));
    ++written;
  }
  for (int i = 0; i < sinks; ++i) {
    DTF_ASSIGN_OR_RETURN(bool ok, shards_->Append(i, task.seq, batches[i]));
    if (!ok) return OkStatus();  // another chunk failed first
  }
  rows_read_ += read;
  rows_written_ += written;
  if (!rejected.empty()) {
    rows_skipped_ += static_cast<int64_t>(rejected.size());
    std::lock_guard<std::mutex> lock(mu_);
    for (Rejection& r : rejected) {
      if (rejected_.size() >= GenRecordsResult::kMaxRejectedKept &&
          r.seq > rejected_.back().seq) {
        break;
      }
      rejected_.push_back(std::move(r));
    }
    std::stable_sort(
        rejected_.begin(), rejected_.end(),
        [](const Rejection& a, const Rejection& b) { return a.seq < b.seq; });
    if (rejected_.size() > GenRecordsResult::kMaxRejectedKept) {
      rejected_.resize(GenRecordsResult::kMaxRejectedKept);
    }
  }
  return OkStatus();
}

void Pipeline::Worker() {
  WorkerState state;
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      queue_cv_.wait(lock,
                     [&] { return !queue_.empty() || closed_ || failed(); });
      if (queue_.empty() || failed()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    queue_cv_.notify_all();  // room for the producer
    Status st = Process(task, &state);
    if (!st.ok()) Fail(std::move(st), task.seq);
  }
}

Status Pipeline::Submit(Task task) {
  if (cancelled()) Fail(GenRecordsInterrupted(), -1);
  if (failed()) return OkStatus();
  task.seq = next_seq_++;
  bytes_done_ += task.chunk.data.size();
  if (options_.threads <= 1) {
    Status st = Process(task, &inline_state_);
    if (!st.ok()) Fail(std::move(st), task.seq);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    // A few chunks in flight per thread bounds memory.
    queue_cv_.wait(lock, [&] {
      return queue_.size() < 2 * static_cast<size_t>(options_.threads) ||
             failed();
    });
    queue_.push_back(std::move(task));
    lock.unlock();
    queue_cv_.notify_all();
  }
  if (options_.progress) {
    options_.progress({bytes_done_, bytes_total_,
                       rows_read_.load(std::memory_order_relaxed)});
  }
  return OkStatus();
}

// Reads the first records of the input to infer the schema; the chunks read
// are kept in `held` to be encoded afterwards.
Status Pipeline::InferSchema(CsvChunker& chunker, const std::string& path,
                             std::vector<std::string>* header,
                             std::deque<CsvChunk>* held) {
  std::unique_ptr<SchemaInferrer> inferrer;
  int64_t rows = 0;
  const int64_t limit = options_.infer_rows;
  while (limit <= 0 || rows < limit) {
    if (cancelled()) return GenRecordsInterrupted();
    CsvChunk chunk;
    DTF_ASSIGN_OR_RETURN(bool more, chunker.Next(&chunk));
    if (!more) break;
    CsvChunkParser parser(chunk, options_.csv);
    CsvRow row;
    int64_t record = chunk.first_record;
    while (limit <= 0 || rows < limit) {
      DTF_ASSIGN_OR_RETURN(bool got, parser.Next(&row));
      if (!got) break;
      if (inferrer && options_.header) {
        DTF_RETURN_IF_ERROR(CheckFieldCount(path, row, header->size(),
                                            /*header=*/true));
      }
      if (!inferrer) {
        std::vector<std::string> names;
        if (options_.header) {
          DTF_RETURN_IF_ERROR(CheckHeaderText(path, row, options_.csv));
          for (std::string_view f : row.fields) names.emplace_back(f);
          *header = names;
        }
        std::vector<std::string> missing = {""};
        missing.insert(missing.end(), options_.infer_missing.begin(),
                       options_.infer_missing.end());
        inferrer = std::make_unique<SchemaInferrer>(std::move(names), missing);
        if (options_.header && record == 0) {
          ++record;
          continue;
        }
      }
      inferrer->Add(row.fields);
      ++rows;
      ++record;
    }
    held->push_back(std::move(chunk));
  }
  if (!inferrer) {
    return InvalidArgumentError(
        StrCat(path, ": no rows to infer a schema from"));
  }
  // The missing values: "", --missing's, and the NA spellings of numeric
  // columns.
  DTF_ASSIGN_OR_RETURN(schema_, inferrer->Finish(options_.infer_label));
  return OkStatus();
}

Status Pipeline::PrepareInput(const std::string& path, int64_t* row_base) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  CsvChunker chunker(std::move(file), options_.csv);
  std::deque<CsvChunk> held;
  std::vector<std::string> header;
  if (encoders_.empty() && !options_.schema) {
    DTF_RETURN_IF_ERROR(InferSchema(chunker, path, &header, &held));
  }
  auto next = [&](CsvChunk* chunk) -> StatusOr<bool> {
    if (!held.empty()) {
      *chunk = std::move(held.front());
      held.pop_front();
      return true;
    }
    return chunker.Next(chunk);
  };
  // Chunks of blank lines only hold nothing; the header is in the first
  // chunk that holds a record.
  CsvChunk first;
  bool any;
  do {
    if (cancelled()) return GenRecordsInterrupted();
    DTF_ASSIGN_OR_RETURN(any, next(&first));
  } while (any && first.records == 0);
  if (!any) return OkStatus();  // an input without records holds no rows
  if (options_.header && header.empty()) {
    CsvChunkParser parser(first, options_.csv);
    CsvRow row;
    DTF_ASSIGN_OR_RETURN(bool got, parser.Next(&row));
    if (got) {
      DTF_RETURN_IF_ERROR(CheckHeaderText(path, row, options_.csv));
      for (std::string_view f : row.fields) header.emplace_back(f);
    }
  }
  DTF_ASSIGN_OR_RETURN(RowEncoder enc, RowEncoder::Create(schema_, header, path,
                                                          options_.csv.quote));
  int key_index = -1;
  if (!options_.shard_key.empty()) {
    key_index = enc.CsvIndex(options_.shard_key);
    if (key_index < 0) {
      return InvalidArgumentError(StrCat(path, ": shard key column \"",
                                         options_.shard_key, "\" not found"));
    }
  }
  encoders_.push_back(std::make_unique<RowEncoder>(std::move(enc)));
  routers_.push_back(std::make_unique<Router>(options_, key_index));
  int64_t records = 0;
  for (bool more = true; more && !failed();) {
    records = first.first_record + first.records;
    Task task;
    task.chunk = std::move(first);
    task.encoder = encoders_.back().get();
    task.router = routers_.back().get();
    task.input_row_base = *row_base;
    task.header = options_.header;
    DTF_RETURN_IF_ERROR(Submit(std::move(task)));
    DTF_ASSIGN_OR_RETURN(more, next(&first));
  }
  *row_base += std::max<int64_t>(0, records - (options_.header ? 1 : 0));
  return OkStatus();
}

Status Pipeline::Run(GenRecordsResult* result) {
  auto start = std::chrono::steady_clock::now();
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> inputs,
                       ExpandInputs(options_.inputs));
  for (const std::string& path : inputs) {
    struct stat st;
    if (path != "-" && stat(path.c_str(), &st) == 0) bytes_total_ += st.st_size;
  }
  if (options_.schema) schema_ = *options_.schema;
  std::vector<std::thread> workers;
  if (options_.threads > 1) {
    for (int i = 0; i < options_.threads; ++i) {
      workers.emplace_back([this] { Worker(); });
    }
  }
  Status st;
  int64_t row_base = 0;
  for (const std::string& path : inputs) {
    st = PrepareInput(path, &row_base);
    if (!st.ok() || failed()) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  queue_cv_.notify_all();
  for (std::thread& t : workers) t.join();
  if (!st.ok()) return st;
  if (failed()) return error_;
  DTF_RETURN_IF_ERROR(shards_->Finish());
  result->rows_read = rows_read_;
  result->rows_written = rows_written_;
  result->rows_skipped = rows_skipped_;
  for (Rejection& r : rejected_) result->rejected.push_back(std::move(r.row));
  result->bytes_read = bytes_done_;
  result->schema = schema_;
  for (const ShardSet::FileInfo& f : shards_->files()) {
    result->outputs.push_back({f.split, f.path, f.records, f.bytes});
  }
  result->seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return OkStatus();
}

Status ValidateSplits(const std::vector<SplitFraction>& splits) {
  double sum = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    const SplitFraction& s = splits[i];
    if (s.name.empty() || s.name.find('/') != std::string::npos) {
      return InvalidArgumentError(
          StrCat("split name \"", s.name, "\" is not a directory name"));
    }
    if (!(s.fraction > 0)) {
      return InvalidArgumentError(
          StrCat("split ", s.name, ": fraction must be > 0"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (splits[j].name == s.name) {
        return InvalidArgumentError(
            StrCat("split ", s.name, " is given twice"));
      }
    }
    sum += s.fraction;
  }
  if (!splits.empty() && std::abs(sum - 1) > 1e-9) {
    return InvalidArgumentError(
        StrCat("split fractions must add up to 1, got ", sum));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandInputs(
    const std::vector<std::string>& patterns) {
  std::vector<std::string> paths;
  for (const std::string& p : patterns) {
    if (p == "-" || p.find_first_of("*?[") == std::string::npos) {
      paths.push_back(p);
      continue;
    }
    if (IsRemotePath(p)) {
      DTF_ASSIGN_OR_RETURN(std::vector<FileInfo> found, ListFiles(p));
      if (found.empty()) return NotFoundError(StrCat(p, ": no file matches"));
      for (const FileInfo& f : found) paths.push_back(f.path);
      continue;
    }
    glob_t g;
    int rc = glob(p.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == GLOB_NOMATCH) {
      globfree(&g);
      return NotFoundError(StrCat(p, ": no file matches"));
    }
    if (rc != 0) {
      globfree(&g);
      return InvalidArgumentError(StrCat(p, ": cannot expand pattern"));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  if (paths.empty()) return InvalidArgumentError("no input files");
  return paths;
}

StatusOr<GenRecordsResult> GenRecords(const GenRecordsOptions& options) {
  StagedRecords staged;
  DTF_ASSIGN_OR_RETURN(GenRecordsResult result, staged.Stage(options));
  DTF_RETURN_IF_ERROR(staged.Commit());
  return result;
}

Status StagedRecords::Commit() {
  // Local runs first (the remote runs' shards are published into their
  // local staging directories), then the uploads; a failed upload leaves
  // the local outputs in place.
  for (size_t i = 0; i < runs_.size(); ++i) {
    Status status = runs_[i]->Publish();
    if (!status.ok()) {
      for (size_t j = i; j-- > 0;) runs_[j]->Unpublish();
      return status;
    }
  }
  for (auto& run : remote_) DTF_RETURN_IF_ERROR(CommitRemote(run.get()));
  return OkStatus();
}

StatusOr<GenRecordsResult> StagedRecords::Stage(
    const GenRecordsOptions& options) {
  if (IsRemotePath(options.out_dir)) return StageRemote(options);
  if (options.threads < 1) {
    return InvalidArgumentError(
        StrCat("threads must be at least 1, got ", options.threads));
  }
  DTF_RETURN_IF_ERROR(ValidateSplits(options.splits));
  if (options.schema) DTF_RETURN_IF_ERROR(ValidateSchema(*options.schema));
  ShardSet::Options so;
  so.out_dir = options.out_dir;
  for (const SplitFraction& s : options.splits) so.splits.push_back(s.name);
  if (so.splits.empty()) so.splits.push_back("");
  so.shards = options.shards;
  so.compression = options.compression;
  so.write_index = options.write_index;
  so.overwrite = options.overwrite;
  so.part = options.part;
  so.parts = options.parts;
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardSet> shards, ShardSet::Create(so));
  GenRecordsResult result;
  Pipeline pipeline(options, shards.get());
  DTF_RETURN_IF_ERROR(pipeline.Run(&result));
  runs_.push_back(std::move(shards));
  return result;
}

std::vector<GenRecordsOptions> GenRecordsOptionsFromJob(const JobFile& job) {
  std::vector<GenRecordsOptions> runs;
  for (const CsvSource& source : job.data.csv) {
    GenRecordsOptions o;
    o.inputs = source.paths;
    o.csv = job.data.csv_options;
    o.header = job.data.header;
    o.schema = job.schema;
    o.out_dir = source.split.empty()
                    ? job.data.records_dir
                    : StrCat(job.data.records_dir, "/", source.split);
    o.shards = job.data.shards;
    o.shard_key = job.data.shard_key;
    o.compression = job.data.compression;
    if (source.split.empty()) o.splits = job.data.split;
    runs.push_back(std::move(o));
  }
  return runs;
}

}  // namespace dtf
