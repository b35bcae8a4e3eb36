#include "lib/data/record_stream.h"

#include <algorithm>
#include <utility>

#include "lib/base/strings.h"

namespace dtf {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A seed for one purpose (`salt`) in one epoch.
uint64_t Mix(uint64_t seed, uint64_t salt, int64_t epoch, int64_t reader) {
  uint64_t h = SplitMix64(seed);
  h = SplitMix64(h ^ salt);
  h = SplitMix64(h ^ static_cast<uint64_t>(epoch));
  return SplitMix64(h ^ static_cast<uint64_t>(reader));
}

constexpr uint64_t kFileOrderSalt = 0x66696c65;  // "file"
constexpr uint64_t kShuffleSalt = 0x73687566;    // "shuf"

// Uniform in [0, n), the same on every platform (unlike
// std::uniform_int_distribution). REQUIRES: n > 0.
uint64_t Uniform(std::mt19937_64& rng, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(rng()) * n) >>
                               64);
}

}  // namespace

RecordStream::RecordStream(RecordStreamOptions options)
    : options_(std::move(options)) {
  reader_options_.detect_compression = !options_.compression.has_value();
  reader_options_.compression =
      options_.compression.value_or(Compression::kNone);
  if (options_.cache != nullptr) {
    filler_ = std::make_unique<CacheFiller>(
        options_.cache, std::max(1, options_.parse_threads));
  }
}

StatusOr<std::unique_ptr<RecordStream>> RecordStream::Create(
    RecordStreamOptions options) {
  const InputPosition start = options.start;
  std::unique_ptr<RecordStream> s(new RecordStream(std::move(options)));
  const int64_t epochs = s->options_.epochs;
  if (start.epoch < 0 || start.file < 0 || start.record < 0 ||
      start.epoch_record < start.record || start.emitted < -1) {
    return InvalidArgumentError(
        StrCat("start position (epoch ", start.epoch, ", file ", start.file,
               ", record ", start.record, ", epoch record ", start.epoch_record,
               ", ", start.emitted, " records yielded) is not a position"));
  }
  if (start.file > static_cast<int64_t>(s->options_.shard.files.size())) {
    return InvalidArgumentError(
        StrCat("start position: file ", start.file, " of an epoch of ",
               s->options_.shard.files.size(), " files"));
  }
  s->pos_ = start;
  if (epochs >= 0 && start.epoch >= epochs) {
    s->done_ = true;
    return s;
  }
  const bool mid_epoch = start.file != 0 || start.record != 0;
  if (s->options_.shuffle_buffer_size > 0 && mid_epoch && start.emitted > 0) {
    // The epoch is read again from its start (Replay).
    s->replay_to_ = start;
    s->pos_ = InputPosition{start.epoch, 0, 0, 0};
    s->BeginEpoch();
    return s;
  }
  // Without shuffling, or at an epoch's start, the count is not needed; a
  // shuffled position mid-epoch without it stays unknown to the epoch's end.
  const bool unknown = s->options_.shuffle_buffer_size > 0 && mid_epoch;
  s->pos_.emitted = unknown ? -1 : 0;
  s->BeginEpoch();
  s->whole_epoch_ = !mid_epoch;
  return s;
}

std::vector<int64_t> RecordStream::EpochFiles(int64_t epoch) const {
  std::vector<int64_t> order = options_.shard.files;
  if (options_.shuffle_buffer_size == 0) return order;
  // Not mixed with the reader index: with fewer files than readers, every
  // reader must see the same order for the sharding rule to hold.
  std::mt19937_64 rng(Mix(options_.seed, kFileOrderSalt, epoch, 0));
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[Uniform(rng, i)]);
  }
  return order;
}

void RecordStream::BeginEpoch() {
  order_ = EpochFiles(pos_.epoch);
  rng_.seed(
      Mix(options_.seed, kShuffleSalt, pos_.epoch, options_.reader_index));
  whole_epoch_ = true;
  kept_any_ = false;
  epoch_read_ = false;
  buffered_ = 0;
}

void RecordStream::EndEpoch() {
  reader_.reset();
  open_ = false;
  if (whole_epoch_ && !kept_any_) {
    done_ = true;
    return;
  }
  pos_ = InputPosition{pos_.epoch + 1, 0, 0, 0};
  if (options_.epochs >= 0 && pos_.epoch >= options_.epochs) {
    done_ = true;
    return;
  }
  BeginEpoch();
}

Status RecordStream::CheckStop() const {
  if (options_.stop != nullptr &&
      options_.stop->load(std::memory_order_relaxed)) {
    return CancelledError("input pipeline stopped");
  }
  return OkStatus();
}

Status RecordStream::OpenFile() {
  const int64_t file = order_[pos_.file];
  open_ = true;
  if (options_.cache != nullptr && pos_.record == 0 &&
      options_.cache->Has(file)) {
    mode_ = Mode::kReplay;
    replay_block_ = 0;
    replay_row_ = 0;
    replaying_.reset();
    return OkStatus();
  }
  const std::string& path = options_.files[file];
  DTF_ASSIGN_OR_RETURN(reader_, RecordReader::Open(path, reader_options_));
  for (int64_t i = 0; i < pos_.record; ++i) {
    DTF_RETURN_IF_ERROR(CheckStop());
    DTF_ASSIGN_OR_RETURN(bool more, reader_->ReadRecord(&out_.data));
    if (!more) {
      reader_.reset();
      return FailedPreconditionError(
          StrCat(path, ": holds ", i, " records; the start position is at ",
                 pos_.record));
    }
  }
  // A file read from its start fills the cache.
  mode_ =
      options_.cache != nullptr && pos_.record == 0 ? Mode::kFill : Mode::kRaw;
  if (mode_ == Mode::kFill) {
    filler_->Start(file, path, reader_.get(), &options_.shard,
                   pos_.epoch_record);
  }
  return OkStatus();
}

void RecordStream::NextFile() {
  reader_.reset();
  open_ = false;
  replaying_.reset();
  ++pos_.file;
  pos_.record = 0;
}

StatusOr<bool> RecordStream::ReplayNext(Record* r) {
  RowCache& cache = *options_.cache;
  const int64_t file = order_[pos_.file];
  while (replaying_ == nullptr || replay_row_ >= replaying_->rows()) {
    if (replay_block_ >= cache.blocks(file)) {
      // The records after the last kept one.
      pos_.epoch_record += cache.records(file) - pos_.record;
      pos_.record = cache.records(file);
      return false;
    }
    DTF_ASSIGN_OR_RETURN(replaying_, cache.Block(file, replay_block_++));
    replay_row_ = 0;
  }
  const int64_t record = replaying_->records[replay_row_];
  pos_.epoch_record += record + 1 - pos_.record;
  pos_.record = record + 1;
  if (!options_.shard.Keeps(pos_.epoch_record - 1)) {
    return InternalError(StrCat(path(file), ": record ", record,
                                " is in the input cache but not in this "
                                "reader's shard this epoch"));
  }
  r->data.clear();
  r->file = file;
  r->offset = 0;
  r->block = replaying_;
  r->row = replay_row_++;
  return true;
}

StatusOr<bool> RecordStream::FillNext(Record* r) {
  DTF_ASSIGN_OR_RETURN(const CacheFiller::Row* row,
                       filler_->Next(options_.stop));
  if (row == nullptr) {
    pos_.epoch_record += filler_->records() - pos_.record;
    pos_.record = filler_->records();
    return false;
  }
  pos_.epoch_record += row->record + 1 - pos_.record;
  pos_.record = row->record + 1;
  DTF_RETURN_IF_ERROR(row->status);
  r->data.clear();
  r->file = order_[pos_.file];
  r->offset = row->offset;
  r->block = row->block;
  r->row = row->row;
  return true;
}

StatusOr<bool> RecordStream::ReadKept(Record* r) {
  for (;;) {
    DTF_RETURN_IF_ERROR(CheckStop());
    if (pos_.file >= static_cast<int64_t>(order_.size())) return false;
    if (!open_) DTF_RETURN_IF_ERROR(OpenFile());
    if (mode_ != Mode::kRaw) {
      DTF_ASSIGN_OR_RETURN(
          bool got, mode_ == Mode::kReplay ? ReplayNext(r) : FillNext(r));
      if (!got) {
        NextFile();
        continue;
      }
      kept_any_ = true;
      return true;
    }
    const uint64_t offset = reader_->offset();
    DTF_ASSIGN_OR_RETURN(bool more, reader_->ReadRecord(&r->data));
    if (!more) {
      NextFile();
      continue;
    }
    ++pos_.record;
    if (!options_.shard.Keeps(pos_.epoch_record++)) continue;
    r->file = order_[pos_.file];
    r->offset = offset;
    kept_any_ = true;
    r->block.reset();
    return true;
  }
}

StatusOr<const Record*> RecordStream::Next() {
  if (replay_to_) DTF_RETURN_IF_ERROR(Replay());
  return Emit();
}

Status RecordStream::Replay() {
  const InputPosition to = *replay_to_;
  while (pos_.epoch == to.epoch && pos_.emitted < to.emitted) {
    DTF_ASSIGN_OR_RETURN(const Record* r, Emit());
    if (r == nullptr) break;
  }
  if (pos_ != to) {
    return FailedPreconditionError(StrCat(
        "start position (epoch ", to.epoch, ", file ", to.file, ", record ",
        to.record, ", epoch record ", to.epoch_record, ", ", to.emitted,
        " records yielded): reading the epoch again from its start yielded ",
        pos_.emitted, " records at file ", pos_.file, ", record ", pos_.record,
        "; the input files changed since"));
  }
  replay_to_.reset();
  return OkStatus();
}

StatusOr<const Record*> RecordStream::Emit() {
  const size_t capacity = static_cast<size_t>(options_.shuffle_buffer_size);
  for (;;) {
    if (done_) return nullptr;
    if (capacity == 0) {
      DTF_ASSIGN_OR_RETURN(bool got, ReadKept(&out_));
      if (got) return &out_;
      EndEpoch();
      continue;
    }
    while (!epoch_read_ && buffered_ < capacity) {
      if (buffer_.size() == buffered_) buffer_.emplace_back();
      DTF_ASSIGN_OR_RETURN(bool got, ReadKept(&buffer_[buffered_]));
      if (!got) {
        epoch_read_ = true;
        break;
      }
      ++buffered_;
    }
    if (buffered_ == 0) {
      EndEpoch();
      continue;
    }
    const size_t i = Uniform(rng_, buffered_);
    std::swap(out_, buffer_[i]);
    std::swap(buffer_[i], buffer_[--buffered_]);
    if (pos_.emitted >= 0) ++pos_.emitted;
    return &out_;
  }
}

}  // namespace dtf
