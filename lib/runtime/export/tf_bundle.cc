#include "lib/runtime/export/tf_bundle.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "proto/tensor_bundle.pb.h"

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

std::string_view TfTensorBytes(const TfBundleTensor& t) {
  return std::string_view(reinterpret_cast<const char*>(t.value->data()),
                          static_cast<size_t>(t.value->size()) * sizeof(float));
}

// Sorts `tensors` by name and returns the index for their bytes laid end to
// end in that order.
StatusOr<std::string> MakeTfBundleIndex(std::vector<TfBundleTensor>* tensors) {
  std::sort(tensors->begin(), tensors->end(),
            [](const TfBundleTensor& a, const TfBundleTensor& b) {
              return a.name < b.name;
            });
  std::vector<std::pair<std::string, std::string>> entries;
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  entries.emplace_back("", header.SerializeAsString());
  int64_t offset = 0;
  for (size_t i = 0; i < tensors->size(); ++i) {
    const TfBundleTensor& t = (*tensors)[i];
    if (t.name.empty()) {
      return InvalidArgumentError("a bundle tensor has an empty name");
    }
    if (i > 0 && (*tensors)[i - 1].name == t.name) {
      return InvalidArgumentError(
          StrCat("two bundle tensors are named \"", t.name, "\""));
    }
    const std::string_view bytes = TfTensorBytes(t);
    tensorflow::BundleEntryProto entry;
    entry.set_dtype(tensorflow::DT_FLOAT);
    for (int64_t d : t.value->shape()) {
      entry.mutable_shape()->add_dim()->set_size(d);
    }
    entry.set_shard_id(0);
    entry.set_offset(offset);
    entry.set_size(static_cast<int64_t>(bytes.size()));
    entry.set_crc32c(crc32c::Mask(crc32c::Value(bytes)));
    offset += static_cast<int64_t>(bytes.size());
    entries.emplace_back(t.name, entry.SerializeAsString());
  }
  return MakeTfTable(entries);
}

}  // namespace

StatusOr<TfBundleFiles> MakeTfBundle(std::vector<TfBundleTensor> tensors) {
  TfBundleFiles files;
  DTF_ASSIGN_OR_RETURN(files.index, MakeTfBundleIndex(&tensors));
  for (const TfBundleTensor& t : tensors) files.data += TfTensorBytes(t);
  return files;
}

std::string TfBundleIndexPath(std::string_view prefix) {
  return StrCat(prefix, ".index");
}

std::string TfBundleDataPath(std::string_view prefix) {
  return StrCat(prefix, ".data-00000-of-00001");
}

Status WriteTfBundle(const std::string& prefix,
                     std::vector<TfBundleTensor> tensors) {
  DTF_ASSIGN_OR_RETURN(const std::string index, MakeTfBundleIndex(&tensors));
  // The data straight from the tensors, without a copy of them in memory.
  const std::string data_path = TfBundleDataPath(prefix);
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> data,
                       OpenWritableFile(data_path));
  for (const TfBundleTensor& t : tensors) {
    DTF_RETURN_IF_ERROR(data->Append(TfTensorBytes(t)));
  }
  DTF_RETURN_IF_ERROR(data->Sync());
  DTF_RETURN_IF_ERROR(data->Close());
  return WriteFileAtomically(TfBundleIndexPath(prefix), index);
}

}  // namespace dtf::runtime
