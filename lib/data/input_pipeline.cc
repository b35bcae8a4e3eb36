#include "lib/data/input_pipeline.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/example_parser.h"
#include "lib/data/gen_records.h"
#include "lib/data/record_stream.h"
#include "lib/data/row_cache.h"

namespace dtf {
namespace {

Status ValidateOptions(const InputPipelineOptions& o) {
  if (o.files.empty()) return InvalidArgumentError("files: none given");
  if (o.batch_size < 1) {
    return InvalidArgumentError(
        StrCat("batch_size: ", o.batch_size, " is not at least 1"));
  }
  if (o.epochs < -1) {
    return InvalidArgumentError(
        StrCat("epochs: ", o.epochs, " is neither -1 nor at least 0"));
  }
  if (o.shuffle_buffer_size < 0) {
    return InvalidArgumentError(
        StrCat("shuffle_buffer_size: ", o.shuffle_buffer_size, " is negative"));
  }
  if (o.cache.memory_budget_bytes < 0) {
    return InvalidArgumentError(
        StrCat("cache.memory_budget_bytes: ", o.cache.memory_budget_bytes,
               " is negative"));
  }
  if (o.cache.rows_per_block < 1) {
    return InvalidArgumentError(
        StrCat("cache.rows_per_block: ", o.cache.rows_per_block,
               " is not at least 1"));
  }
  if (o.cache.parse_threads < 1) {
    return InvalidArgumentError(StrCat(
        "cache.parse_threads: ", o.cache.parse_threads, " is not at least 1"));
  }
  if (o.prefetch < 0) {
    return InvalidArgumentError(
        StrCat("prefetch: ", o.prefetch, " is negative"));
  }
  return ValidateFeatureParseSpecs(o.features);
}

}  // namespace

// Fills batches from the record stream; runs on one thread at a time.
class InputPipeline::Producer {
 public:
  Producer(std::unique_ptr<RecordStream> stream,
           std::vector<FeatureParseSpec> specs, int64_t batch_size,
           bool drop_remainder)
      : stream_(std::move(stream)),
        parser_(std::move(specs)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  // Fills `*batch`; `*position` receives the stream's position after its
  // last row. False when no (full enough) batch is left.
  StatusOr<bool> Fill(Batch* batch, InputPosition* position) {
    batch->Reset(parser_.specs(), batch_size_);
    while (batch->rows < batch_size_) {
      DTF_ASSIGN_OR_RETURN(const Record* r, stream_->Next());
      if (r == nullptr) break;
      if (r->block != nullptr) {
        AppendEncodedRow(r->block->row(r->row), batch);
        continue;
      }
      Status st = parser_.AddRow(r->data, batch);
      if (!st.ok()) {
        batch->rows = 0;
        return Annotate(st, StrCat(stream_->path(r->file),
                                   ": record at offset ", r->offset));
      }
    }
    if (batch->rows == 0 || (drop_remainder_ && batch->rows < batch_size_)) {
      batch->rows = 0;
      return false;
    }
    batch->Finish();
    *position = stream_->position();
    return true;
  }

 private:
  std::unique_ptr<RecordStream> stream_;
  ExampleParser parser_;
  int64_t batch_size_;
  bool drop_remainder_;
};

struct InputPipeline::Slot {
  Batch batch;
  InputPosition position;
};

struct InputPipeline::Prefetch {
  std::mutex mu;
  std::condition_variable cv;
  // Filled batches in order, and empty ones for the producer to fill.
  std::deque<std::unique_ptr<Slot>> ready;
  std::vector<std::unique_ptr<Slot>> free;
  // Set by the producer when it has stopped: at the end (OK) or on an error.
  bool finished = false;
  Status final_status;
  // Set by the destructor; the record stream watches it too.
  std::atomic<bool> stop{false};
  std::thread thread;
};

InputPipeline::InputPipeline() = default;

StatusOr<std::unique_ptr<InputPipeline>> InputPipeline::Create(
    InputPipelineOptions options) {
  DTF_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<InputPipeline> p(new InputPipeline());
  DTF_ASSIGN_OR_RETURN(p->files_, ExpandInputs(options.files));
  std::sort(p->files_.begin(), p->files_.end());
  p->files_.erase(std::unique(p->files_.begin(), p->files_.end()),
                  p->files_.end());
  DTF_ASSIGN_OR_RETURN(p->assignment_,
                       AssignShard(static_cast<int64_t>(p->files_.size()),
                                   options.reader_index, options.reader_count));
  if (options.prefetch > 0) p->prefetch_ = std::make_unique<Prefetch>();

  RecordStreamOptions so;
  so.files = p->files_;
  so.shard = p->assignment_;
  so.compression = options.compression;
  so.epochs = options.epochs;
  so.shuffle_buffer_size = options.shuffle_buffer_size;
  so.seed = options.seed;
  so.reader_index = options.reader_index;
  so.start = options.start;
  so.stop = p->prefetch_ ? &p->prefetch_->stop : nullptr;
  // A cache pays off from the second epoch on, and needs the same records
  // in every epoch.
  const bool several_epochs = options.epochs < 0 || options.epochs > 1;
  if (options.cache.enabled && several_epochs &&
      (p->assignment_.whole_files() || options.shuffle_buffer_size == 0)) {
    RowCacheOptions co;
    co.features = options.features;
    co.memory_budget_bytes = options.cache.memory_budget_bytes;
    co.spill_dir = options.cache.spill_dir;
    co.rows_per_block = options.cache.rows_per_block;
    p->cache_ = std::make_unique<RowCache>(std::move(co));
    so.cache = p->cache_.get();
    so.parse_threads = options.cache.parse_threads;
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<RecordStream> stream,
                       RecordStream::Create(std::move(so)));
  p->producer_ =
      std::make_unique<Producer>(std::move(stream), std::move(options.features),
                                 options.batch_size, options.drop_remainder);
  p->position_ = options.start;
  if (p->prefetch_) {
    for (int64_t i = 0; i < options.prefetch; ++i) {
      p->prefetch_->free.push_back(std::make_unique<Slot>());
    }
    p->prefetch_->thread = std::thread([raw = p.get()] { raw->Run(); });
  }
  return p;
}

InputCacheStats InputPipeline::cache_stats() const {
  InputCacheStats s;
  if (cache_ == nullptr) return s;
  const RowCacheStats c = cache_->stats();
  s.active = true;
  s.files = c.files;
  s.rows = c.rows;
  s.memory_bytes = c.memory_bytes;
  s.disk_bytes = c.disk_bytes;
  s.spill_path = c.spill_path;
  return s;
}

InputPipeline::~InputPipeline() {
  if (!prefetch_ || !prefetch_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(prefetch_->mu);
    prefetch_->stop.store(true);
  }
  prefetch_->cv.notify_all();
  prefetch_->thread.join();
}

void InputPipeline::Run() {
  Prefetch& q = *prefetch_;
  for (;;) {
    std::unique_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(q.mu);
      q.cv.wait(lock, [&] { return q.stop.load() || !q.free.empty(); });
      if (q.stop.load()) return;
      slot = std::move(q.free.back());
      q.free.pop_back();
    }
    StatusOr<bool> got = producer_->Fill(&slot->batch, &slot->position);
    std::lock_guard<std::mutex> lock(q.mu);
    if (!got.ok() || !*got) {
      q.finished = true;
      q.final_status = got.status();
      q.cv.notify_all();
      return;
    }
    q.ready.push_back(std::move(slot));
    q.cv.notify_all();
  }
}

StatusOr<bool> InputPipeline::Next(Batch* batch) {
  if (!status_.ok() || ended_) {
    batch->rows = 0;
    if (!status_.ok()) return status_;
    return false;
  }
  if (!prefetch_) {
    InputPosition pos;
    StatusOr<bool> got = producer_->Fill(batch, &pos);
    if (!got.ok()) {
      batch->rows = 0;
      status_ = got.status();
      return status_;
    }
    if (!*got) {
      ended_ = true;
      return false;
    }
    position_ = pos;
    return true;
  }
  Prefetch& q = *prefetch_;
  std::unique_lock<std::mutex> lock(q.mu);
  q.cv.wait(lock, [&] { return !q.ready.empty() || q.finished; });
  if (q.ready.empty()) {
    batch->rows = 0;
    if (!q.final_status.ok()) {
      status_ = q.final_status;
      return status_;
    }
    ended_ = true;
    return false;
  }
  std::unique_ptr<Slot> slot = std::move(q.ready.front());
  q.ready.pop_front();
  position_ = slot->position;
  std::swap(*batch, slot->batch);
  q.free.push_back(std::move(slot));
  lock.unlock();
  q.cv.notify_all();
  return true;
}

}  // namespace dtf
