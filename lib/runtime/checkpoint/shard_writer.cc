#include "lib/runtime/checkpoint/shard_writer.h"

#include "lib/base/strings.h"
#include "lib/data/crc32c.h"

namespace dtf::runtime {

StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Open(std::string prefix,
                                                         int shard,
                                                         int num_shards) {
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<WritableFile> file,
      OpenWritableFile(StrCat(ShardedDataPath(prefix, shard, num_shards),
                              kShardedTempSuffix)));
  return std::unique_ptr<ShardWriter>(new ShardWriter(std::move(file), shard));
}

Status ShardWriter::Add(std::string key, TfDtype dtype,
                        std::span<const int64_t> shape,
                        std::string_view bytes) {
  ShardedEntry e;
  e.dtype = dtype;
  e.shape.assign(shape.begin(), shape.end());
  e.shard = shard_;
  e.offset = offset_;
  e.size = int64_t(bytes.size());
  e.crc32c = crc32c::Mask(crc32c::Value(bytes.data(), bytes.size()));
  DTF_RETURN_IF_ERROR(file_->Append(bytes));
  offset_ += e.size;
  entries_.emplace_back(std::move(key), SerializeShardedEntry(e));
  return OkStatus();
}

Status ShardWriter::AddSlice(const std::string& full_key, TfDtype dtype,
                             std::span<const int64_t> full_shape, int64_t start,
                             int64_t rows, std::string_view bytes) {
  if (rows == 0) return OkStatus();
  ShardedEntry full;
  full.dtype = dtype;
  full.shape.assign(full_shape.begin(), full_shape.end());
  full.slices.push_back({start, rows});
  std::vector<int64_t> shape = full.shape;
  shape[0] = rows;
  DTF_RETURN_IF_ERROR(
      Add(EncodeTensorNameSlice(full_key, int(shape.size()), start, rows),
          dtype, shape, bytes));
  entries_.emplace_back(full_key, SerializeShardedEntry(full));
  return OkStatus();
}

Status ShardWriter::AddBundle(const Bundle& bundle) {
  for (const BundleEntry& e : bundle.entries()) {
    const TfDtype dtype =
        e.type == bundle_format::EntryType::kFloat32 ? TfDtype::kFloat
        : e.type == bundle_format::EntryType::kInt64 ? TfDtype::kInt64
                                                     : TfDtype::kUint8;
    DTF_RETURN_IF_ERROR(Add(e.name, dtype, e.shape, e.data));
  }
  return OkStatus();
}

StatusOr<ShardedIndexEntries> ShardWriter::Finish() {
  DTF_RETURN_IF_ERROR(file_->Sync());
  DTF_RETURN_IF_ERROR(file_->Close());
  return std::move(entries_);
}

}  // namespace dtf::runtime
