#include "lib/data/cache_filler.h"

#include <utility>

#include "lib/base/strings.h"
#include "lib/data/row_format.h"

namespace dtf {
namespace {

// Kept records each parse thread takes per chunk.
constexpr int64_t kRecordsPerThread = 256;

}  // namespace

CacheFiller::CacheFiller(RowCache* cache, int parse_threads)
    : cache_(cache), threads_(parse_threads), work_(threads_.size()) {
  for (int i = 0; i < threads_.size(); ++i) {
    parsers_.push_back(std::make_unique<ExampleParser>(cache_->features()));
  }
}

void CacheFiller::Start(int64_t file, const std::string& path,
                        RecordReader* reader, const ShardAssignment* shard,
                        int64_t epoch_start) {
  file_ = file;
  path_ = path;
  reader_ = reader;
  shard_ = shard;
  epoch_start_ = epoch_start;
  read_ = 0;
  eof_ = false;
  committed_ = false;
  failed_ = OkStatus();
  rows_.clear();
  next_ = 0;
  filling_.reset();
}

StatusOr<const CacheFiller::Row*> CacheFiller::Next(
    const std::atomic<bool>* stop) {
  if (!failed_.ok()) return failed_;
  while (next_ == rows_.size()) {
    if (eof_) {
      if (!committed_) {
        DTF_RETURN_IF_ERROR(Seal());
        cache_->Commit(file_, read_);
        committed_ = true;
      }
      return nullptr;
    }
    DTF_RETURN_IF_ERROR(ParseAhead(stop));
  }
  const Row* row = &rows_[next_++];
  // Nothing after an error: the file is never committed.
  if (!row->status.ok()) failed_ = row->status;
  return row;
}

Status CacheFiller::ParseAhead(const std::atomic<bool>* stop) {
  rows_.clear();
  next_ = 0;
  const int64_t chunk = kRecordsPerThread * threads_.size();
  if (static_cast<int64_t>(raw_.size()) < chunk) raw_.resize(chunk);
  raw_records_.clear();
  raw_offsets_.clear();
  int64_t n = 0;
  Status read_error;
  while (n < chunk) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      return CancelledError("input pipeline stopped");
    }
    const uint64_t offset = reader_->offset();
    StatusOr<bool> more = reader_->ReadRecord(&raw_[n]);
    if (!more.ok()) {
      // Reported after the records read before it, as without a cache.
      read_error = more.status();
      eof_ = true;
      break;
    }
    if (!*more) {
      eof_ = true;
      break;
    }
    if (!shard_->Keeps(epoch_start_ + read_++)) continue;
    raw_records_.push_back(read_ - 1);
    raw_offsets_.push_back(offset);
    ++n;
  }
  if (n > 0) Parse(n);
  if (!read_error.ok() && (rows_.empty() || rows_.back().status.ok())) {
    Row row;
    row.record = read_;
    row.status = std::move(read_error);
    rows_.push_back(std::move(row));
  }
  return OkStatus();
}

void CacheFiller::Parse(int64_t n) {
  const int threads = threads_.size();
  threads_.Run([&](int t) {
    Work& w = work_[t];
    const int64_t begin = n * t / threads;
    const int64_t end = n * (t + 1) / threads;
    w.data.clear();
    w.ends.clear();
    w.error_at = -1;
    w.scratch.Reset(cache_->features(), end - begin);
    for (int64_t i = begin; i < end; ++i) {
      Status st = parsers_[t]->AddRow(raw_[i], &w.scratch);
      if (!st.ok()) {
        w.error = std::move(st);
        w.error_at = i - begin;
        break;
      }
    }
    for (int64_t r = 0; r < w.scratch.rows; ++r) {
      EncodeRow(w.scratch, r, &w.data);
      w.ends.push_back(static_cast<int64_t>(w.data.size()));
    }
  });
  for (int t = 0; t < threads; ++t) {
    const Work& w = work_[t];
    if (Status st = Append(t, static_cast<int64_t>(w.ends.size())); !st.ok()) {
      Row row;
      row.record = read_;
      row.status = std::move(st);
      rows_.push_back(std::move(row));
      return;
    }
    if (w.error_at >= 0) {
      const int64_t i = n * t / threads + w.error_at;
      Row row;
      row.record = raw_records_[i];
      row.offset = raw_offsets_[i];
      row.status =
          Annotate(w.error, StrCat(path_, ": record at offset ", row.offset));
      rows_.push_back(std::move(row));
      return;
    }
  }
}

Status CacheFiller::Append(int t, int64_t n) {
  const Work& w = work_[t];
  const int64_t base = static_cast<int64_t>(rows_.size());
  for (int64_t r = 0; r < n; ++r) {
    if (filling_ != nullptr && filling_->rows() == cache_->rows_per_block()) {
      DTF_RETURN_IF_ERROR(Seal());
    }
    if (filling_ == nullptr) filling_ = std::make_shared<RowBlock>();
    const int64_t begin = r == 0 ? 0 : w.ends[r - 1];
    filling_->data.append(w.data, begin, w.ends[r] - begin);
    filling_->ends.push_back(static_cast<int64_t>(filling_->data.size()));
    const int64_t i = base + r;
    filling_->records.push_back(raw_records_[i]);
    Row row;
    row.record = raw_records_[i];
    row.offset = raw_offsets_[i];
    row.block = filling_;
    row.row = filling_->rows() - 1;
    rows_.push_back(std::move(row));
  }
  return OkStatus();
}

Status CacheFiller::Seal() {
  if (filling_ == nullptr || filling_->rows() == 0) return OkStatus();
  filling_->data.shrink_to_fit();
  filling_->ends.shrink_to_fit();
  filling_->records.shrink_to_fit();
  Status st = cache_->Add(file_, std::move(filling_));
  filling_.reset();
  return st;
}

}  // namespace dtf
