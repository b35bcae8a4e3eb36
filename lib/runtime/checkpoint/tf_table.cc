#include "lib/runtime/checkpoint/tf_table.h"

#include <algorithm>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/data/crc32c.h"

namespace dtf::runtime {
namespace {

constexpr uint64_t kTfTableMagic = 0xdb4775248b80fb57ull;
constexpr int kTfBlockRestartInterval = 16;
// Two block handles of at most 10 bytes each.
constexpr size_t kTfFooterHandlesSize = 40;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Builds one block: prefix-compressed entries with restart points.
class TfBlockBuilder {
 public:
  explicit TfBlockBuilder(int restart_interval)
      : restart_interval_(restart_interval) {}

  void Add(std::string_view key, std::string_view value) {
    size_t shared = 0;
    if (counter_ < restart_interval_) {
      const size_t n = std::min(last_key_.size(), key.size());
      while (shared < n && last_key_[shared] == key[shared]) ++shared;
    } else {
      restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
      counter_ = 0;
    }
    PutVarint(&buffer_, shared);
    PutVarint(&buffer_, key.size() - shared);
    PutVarint(&buffer_, value.size());
    buffer_.append(key.substr(shared));
    buffer_.append(value);
    last_key_.assign(key);
    ++counter_;
    ++entries_;
  }

  // The block's bytes; resets the builder.
  std::string Finish() {
    std::string out = std::move(buffer_);
    for (uint32_t r : restarts_) PutFixed32(&out, r);
    PutFixed32(&out, static_cast<uint32_t>(restarts_.size()));
    buffer_.clear();
    restarts_.assign(1, 0);
    counter_ = 0;
    entries_ = 0;
    last_key_.clear();
    return out;
  }

  size_t size_estimate() const {
    return buffer_.size() + 4 * (restarts_.size() + 1);
  }
  bool empty() const { return entries_ == 0; }

 private:
  int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_ = {0};
  int counter_ = 0;
  int64_t entries_ = 0;
  std::string last_key_;
};

// Appends `block` with its trailer to `file`; returns its handle.
std::string AppendTfBlock(const std::string& block, std::string* file) {
  std::string handle;
  PutVarint(&handle, file->size());
  PutVarint(&handle, block.size());
  file->append(block);
  const char type = 0;  // no compression
  uint32_t crc = crc32c::Value(block);
  crc = crc32c::Extend(crc, &type, 1);
  file->push_back(type);
  PutFixed32(file, crc32c::Mask(crc));
  return handle;
}

}  // namespace

std::string MakeTfTable(
    const std::vector<std::pair<std::string, std::string>>& entries,
    size_t block_size) {
  std::string file;
  TfBlockBuilder data(kTfBlockRestartInterval);
  TfBlockBuilder index(1);
  std::string last_key;
  auto flush = [&] {
    if (data.empty()) return;
    const std::string handle = AppendTfBlock(data.Finish(), &file);
    index.Add(last_key, handle);
  };
  for (const auto& [key, value] : entries) {
    data.Add(key, value);
    last_key = key;
    if (data.size_estimate() >= block_size) flush();
  }
  flush();
  TfBlockBuilder meta(kTfBlockRestartInterval);
  const std::string meta_handle = AppendTfBlock(meta.Finish(), &file);
  const std::string index_handle = AppendTfBlock(index.Finish(), &file);
  std::string footer = meta_handle + index_handle;
  footer.resize(kTfFooterHandlesSize, '\0');
  PutFixed64(&footer, kTfTableMagic);
  file += footer;
  return file;
}

namespace {

constexpr size_t kTfFooterSize = kTfFooterHandlesSize + 8;
constexpr size_t kTfBlockTrailerSize = 5;

uint32_t LoadFixed32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(s[at + size_t(i)]);
  return v;
}

// Reads a varint of `s` at *at; false when it runs past the end.
bool GetVarint(std::string_view s, size_t* at, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && *at < s.size(); shift += 7) {
    const uint8_t b = uint8_t(s[(*at)++]);
    *v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

class TableReader {
 public:
  TableReader(std::string_view file, const std::string& path)
      : file_(file), path_(path) {}

  Status Corrupt(std::string_view what, uint64_t at) const {
    return DataLossError(StrCat(path_, ": not a tensor bundle index (", what,
                                " at byte ", at, ")"));
  }

  // The block at `handle` (two varints), its trailer checked.
  StatusOr<std::string_view> Block(std::string_view handle, size_t at) const {
    size_t pos = 0;
    uint64_t offset = 0, size = 0;
    if (!GetVarint(handle, &pos, &offset) || !GetVarint(handle, &pos, &size)) {
      return Corrupt("a malformed block handle", at);
    }
    if (offset > file_.size() || size > file_.size() - offset ||
        kTfBlockTrailerSize > file_.size() - offset - size) {
      return Corrupt("a block past the end", offset);
    }
    const std::string_view block = file_.substr(offset, size);
    const char type = file_[offset + size];
    if (type != 0) return Corrupt("a compressed block", offset);
    uint32_t crc = crc32c::Value(block);
    crc = crc32c::Extend(crc, &type, 1);
    if (crc32c::Mask(crc) != LoadFixed32(file_, offset + size + 1)) {
      return Corrupt("a block checksum mismatch", offset);
    }
    return block;
  }

  // Appends the entries of `block` (at byte `at`) to `out`.
  Status Entries(std::string_view block, size_t at,
                 std::vector<std::pair<std::string, std::string>>* out) const {
    if (block.size() < 4) return Corrupt("a short block", at);
    const uint64_t restarts = LoadFixed32(block, block.size() - 4);
    if (restarts > (block.size() - 4) / 4) {
      return Corrupt("a bad restart count", at);
    }
    const std::string_view body =
        block.substr(0, block.size() - 4 * (size_t(restarts) + 1));
    std::string key;
    size_t pos = 0;
    while (pos < body.size()) {
      uint64_t shared = 0, own = 0, value = 0;
      if (!GetVarint(body, &pos, &shared) || !GetVarint(body, &pos, &own) ||
          !GetVarint(body, &pos, &value) || shared > key.size() ||
          own > body.size() - pos || value > body.size() - pos - own) {
        return Corrupt("a malformed entry", at + pos);
      }
      key.resize(size_t(shared));
      key.append(body.substr(pos, size_t(own)));
      pos += size_t(own);
      out->emplace_back(key, std::string(body.substr(pos, size_t(value))));
      pos += size_t(value);
    }
    return OkStatus();
  }

 private:
  std::string_view file_;
  const std::string& path_;
};

}  // namespace

StatusOr<std::vector<std::pair<std::string, std::string>>> ParseTfTable(
    std::string_view file, const std::string& path) {
  TableReader reader(file, path);
  if (file.size() < kTfFooterSize) return reader.Corrupt("no footer", 0);
  const size_t footer_at = file.size() - kTfFooterSize;
  const std::string_view footer = file.substr(footer_at);
  const uint64_t magic = uint64_t{LoadFixed32(footer, 40)} |
                         (uint64_t{LoadFixed32(footer, 44)} << 32);
  if (magic != kTfTableMagic) return reader.Corrupt("a bad magic", footer_at);
  size_t pos = 0;
  uint64_t skip = 0;
  if (!GetVarint(footer, &pos, &skip) || !GetVarint(footer, &pos, &skip)) {
    return reader.Corrupt("a malformed footer", footer_at);
  }
  DTF_ASSIGN_OR_RETURN(std::string_view index_block,
                       reader.Block(footer.substr(pos), footer_at + pos));
  std::vector<std::pair<std::string, std::string>> index;
  DTF_RETURN_IF_ERROR(reader.Entries(index_block, 0, &index));
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [last_key, handle] : index) {
    DTF_ASSIGN_OR_RETURN(std::string_view block,
                         reader.Block(handle, footer_at));
    DTF_RETURN_IF_ERROR(reader.Entries(block, 0, &entries));
  }
  return entries;
}

}  // namespace dtf::runtime
