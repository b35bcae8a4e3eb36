#include "lib/data/row_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/crc32c.h"

namespace dtf {
namespace {

// A spilled block: u64 payload size | u32 masked crc32c(payload) | payload,
// in host byte order (the file lives and dies with the process). The
// payload: the block's ends, records and data, each a u64 count followed by
// the values.
constexpr size_t kHeaderSize = 12;

template <typename T>
void Put(const std::vector<T>& v, std::string* out) {
  const uint64_t n = v.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(reinterpret_cast<const char*>(v.data()), n * sizeof(T));
}

void PutBytes(const std::string& s, std::string* out) {
  const uint64_t n = s.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(s);
}

// Reads what Put wrote; false when the payload is too short.
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  bool Count(uint64_t* n) {
    if (end_ - p_ < static_cast<ptrdiff_t>(sizeof *n)) return false;
    std::memcpy(n, p_, sizeof *n);
    p_ += sizeof *n;
    return true;
  }
  template <typename T>
  bool Get(std::vector<T>* v) {
    uint64_t n;
    if (!Count(&n) || n > static_cast<uint64_t>(end_ - p_) / sizeof(T)) {
      return false;
    }
    v->resize(n);
    std::memcpy(v->data(), p_, n * sizeof(T));
    p_ += n * sizeof(T);
    return true;
  }
  bool GetBytes(std::string* s) {
    uint64_t n;
    if (!Count(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

std::string Encode(const RowBlock& block) {
  std::string out(kHeaderSize, '\0');
  Put(block.ends, &out);
  Put(block.records, &out);
  PutBytes(block.data, &out);
  const uint64_t size = out.size() - kHeaderSize;
  const uint32_t crc = crc32c::Mask(
      crc32c::Value(out.data() + kHeaderSize, out.size() - kHeaderSize));
  std::memcpy(out.data(), &size, 8);
  std::memcpy(out.data() + 8, &crc, 4);
  return out;
}

bool Decode(const char* p, size_t n, RowBlock* block) {
  Reader r(p, n);
  if (!r.Get(&block->ends) || !r.Get(&block->records) ||
      !r.GetBytes(&block->data) || !r.done() ||
      block->ends.size() != block->records.size()) {
    return false;
  }
  int64_t last = 0;
  for (const int64_t end : block->ends) {
    if (end < last) return false;
    last = end;
  }
  return last == static_cast<int64_t>(block->data.size());
}

// Writes all of data[0, n) at `offset`.
Status WriteAll(int fd, const std::string& data, int64_t offset,
                const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = pwrite(fd, data.data() + done, data.size() - done,
                             static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, StrCat(path, ": writing the input cache"));
    }
    done += static_cast<size_t>(w);
  }
  return OkStatus();
}

}  // namespace

int64_t RowBlockBytes(const RowBlock& block) {
  return static_cast<int64_t>(
      sizeof block + block.data.capacity() +
      (block.ends.capacity() + block.records.capacity()) * sizeof(int64_t));
}

RowCache::RowCache(RowCacheOptions options) : options_(std::move(options)) {}

RowCache::~RowCache() {
  if (spill_fd_ >= 0) close(spill_fd_);
  if (!spill_path_.empty()) unlink(spill_path_.c_str());
}

bool RowCache::Has(int64_t file) const {
  return file >= 0 && file < static_cast<int64_t>(files_.size()) &&
         files_[file].committed;
}

int64_t RowCache::blocks(int64_t file) const {
  return static_cast<int64_t>(files_[file].blocks.size());
}

int64_t RowCache::records(int64_t file) const { return files_[file].records; }

Status RowCache::OpenSpill() {
  std::string dir = options_.spill_dir;
  if (dir.empty()) {
    std::error_code ec;
    dir = std::filesystem::temp_directory_path(ec).string();
    if (ec) dir = "/tmp";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return ErrnoToStatus(ec.value(), StrCat(dir,
                                            ": cannot create the input cache's "
                                            "spill directory"));
  }
  std::random_device rd;
  const std::string path =
      (std::filesystem::path(dir) /
       StrCat("dtf-input-cache-", getpid(), "-", rd() % 1000000, ".bin"))
          .string();
  const int fd =
      open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return ErrnoToStatus(errno,
                         StrCat(path, ": cannot create the input cache file"));
  }
  spill_fd_ = fd;
  spill_path_ = path;
  spilled_.store(true, std::memory_order_release);
  return OkStatus();
}

Status RowCache::Spill(const RowBlock& block, Entry* entry) {
  if (spill_fd_ < 0) DTF_RETURN_IF_ERROR(OpenSpill());
  const std::string data = Encode(block);
  DTF_RETURN_IF_ERROR(WriteAll(spill_fd_, data, spill_size_, spill_path_));
  entry->offset = spill_size_;
  entry->size = static_cast<int64_t>(data.size());
  spill_size_ += entry->size;
  stat_disk_.store(spill_size_, std::memory_order_relaxed);
  return OkStatus();
}

Status RowCache::Add(int64_t file, std::shared_ptr<const RowBlock> block) {
  if (file >= static_cast<int64_t>(files_.size())) files_.resize(file + 1);
  // Blocks of a file that was never committed (its reading stopped).
  for (File& f : files_) {
    if (f.committed || &f == &files_[file]) continue;
    for (const Entry& e : f.blocks) {
      if (e.memory) memory_ -= RowBlockBytes(*e.memory);
    }
    f.blocks.clear();
    f.rows = 0;
  }
  stat_memory_.store(memory_, std::memory_order_relaxed);
  Entry entry;
  const int64_t rows = block->rows();
  const int64_t bytes = RowBlockBytes(*block);
  if (memory_ + bytes <= options_.memory_budget_bytes) {
    memory_ += bytes;
    stat_memory_.store(memory_, std::memory_order_relaxed);
    entry.memory = std::move(block);
  } else {
    DTF_RETURN_IF_ERROR(Spill(*block, &entry));
  }
  files_[file].rows += rows;
  files_[file].blocks.push_back(std::move(entry));
  return OkStatus();
}

void RowCache::Commit(int64_t file, int64_t records) {
  if (file >= static_cast<int64_t>(files_.size())) files_.resize(file + 1);
  File& f = files_[file];
  f.committed = true;
  f.records = records;
  stat_files_.fetch_add(1, std::memory_order_relaxed);
  stat_rows_.fetch_add(f.rows, std::memory_order_relaxed);
}

StatusOr<std::shared_ptr<const RowBlock>> RowCache::Block(int64_t file,
                                                          int64_t i) {
  const Entry& e = files_[file].blocks[i];
  if (e.memory) return e.memory;
  // Opened anew for every block, so that a spill file removed under the
  // run is reported as such.
  const int fd = open(spill_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return ErrnoToStatus(
        errno, StrCat(spill_path_, ": cannot open the input cache file"));
  }
  std::string data(e.size, '\0');
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = pread(fd, data.data() + done, data.size() - done,
                            static_cast<off_t>(e.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      close(fd);
      if (err != 0) {
        return ErrnoToStatus(
            err, StrCat(spill_path_, ": reading the input cache at offset ",
                        e.offset));
      }
      return DataLossError(StrCat(spill_path_, ": input cache block at offset ",
                                  e.offset, ": truncated"));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  uint64_t size;
  uint32_t crc;
  std::memcpy(&size, data.data(), 8);
  std::memcpy(&crc, data.data() + 8, 4);
  const char* payload = data.data() + kHeaderSize;
  const size_t payload_size = data.size() - kHeaderSize;
  if (size != payload_size ||
      crc32c::Unmask(crc) != crc32c::Value(payload, payload_size)) {
    return DataLossError(StrCat(spill_path_, ": input cache block at offset ",
                                e.offset, ": checksum mismatch"));
  }
  auto block = std::make_shared<RowBlock>();
  if (!Decode(payload, payload_size, block.get())) {
    return DataLossError(StrCat(spill_path_, ": input cache block at offset ",
                                e.offset, ": malformed"));
  }
  return std::shared_ptr<const RowBlock>(std::move(block));
}

RowCacheStats RowCache::stats() const {
  RowCacheStats s;
  s.files = stat_files_.load(std::memory_order_relaxed);
  s.rows = stat_rows_.load(std::memory_order_relaxed);
  s.memory_bytes = stat_memory_.load(std::memory_order_relaxed);
  s.disk_bytes = stat_disk_.load(std::memory_order_relaxed);
  if (spilled_.load(std::memory_order_acquire)) s.spill_path = spill_path_;
  return s;
}

}  // namespace dtf
