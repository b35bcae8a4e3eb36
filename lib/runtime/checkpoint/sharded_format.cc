#include "lib/runtime/checkpoint/sharded_format.h"

#include <bit>

#include "fmt/format.h"
#include "lib/base/strings.h"
#include "proto/tensor_bundle.pb.h"

namespace dtf::runtime {
namespace {

// TensorFlow's strings::OrderedCode (tensorflow/core/lib/strings/
// ordered_code.cc), the three writers EncodeTensorNameSlice uses.
void WriteNumIncreasing(std::string* out, uint64_t v) {
  char buf[8];
  int len = 0;
  while (v > 0) {
    buf[7 - len] = char(v & 0xff);
    v >>= 8;
    ++len;
  }
  out->push_back(char(len));
  out->append(buf + 8 - len, size_t(len));
}

void WriteString(std::string* out, std::string_view s) {
  for (const char c : s) {
    if (c == '\x00') {
      out->append("\x00\xff", 2);
    } else if (c == '\xff') {
      out->append("\xff\x00", 2);
    } else {
      out->push_back(c);
    }
  }
  out->append("\x00\x01", 2);
}

void WriteSignedNumIncreasing(std::string* out, int64_t val) {
  static constexpr uint8_t kLengthToHeaderBits[11][2] = {
      {0, 0},    {0x80, 0}, {0xc0, 0}, {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
      {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  static constexpr int kBitsToLength[64] = {
      1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4,
      4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7,
      7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10};
  const uint64_t x = val < 0 ? ~uint64_t(val) : uint64_t(val);
  if (x < 64) {
    out->push_back(char(uint8_t(kLengthToHeaderBits[1][0] ^ uint64_t(val))));
    return;
  }
  const char sign = val < 0 ? '\xff' : '\0';
  char buf[10] = {sign, sign};
  for (int i = 0; i < 8; ++i) buf[2 + i] = char(uint64_t(val) >> (56 - 8 * i));
  const int len = kBitsToLength[std::bit_width(x)];
  char* begin = buf + 10 - len;
  begin[0] = char(uint8_t(begin[0]) ^ kLengthToHeaderBits[len][0]);
  begin[1] = char(uint8_t(begin[1]) ^ kLengthToHeaderBits[len][1]);
  out->append(begin, size_t(len));
}

}  // namespace

std::string ShardedBestPrefix(const std::string& dir) {
  return StrCat(dir, "/", kShardedBestDir, "/model");
}

std::string ShardedCheckpointPrefix(const std::string& dir, int64_t step) {
  return StrCat(dir, "/", kShardedCheckpointName, "-", step);
}

std::string ShardedDataPath(std::string_view prefix, int shard,
                            int num_shards) {
  return fmt::format("{}.data-{:05d}-of-{:05d}", prefix, shard, num_shards);
}

std::string ShardedIndexPath(std::string_view prefix) {
  return StrCat(prefix, ".index");
}

std::string SerializeShardedEntry(const ShardedEntry& e) {
  tensorflow::BundleEntryProto proto;
  proto.set_dtype(tensorflow::DataType(int(e.dtype)));
  for (int64_t d : e.shape) proto.mutable_shape()->add_dim()->set_size(d);
  if (e.slices.empty()) {
    proto.set_shard_id(e.shard);
    proto.set_offset(e.offset);
    proto.set_size(e.size);
    proto.set_crc32c(e.crc32c);
  }
  for (const ShardedEntry::Slice& s : e.slices) {
    tensorflow::TensorSliceProto* slice = proto.add_slices();
    for (size_t d = 0; d < e.shape.size(); ++d) {
      tensorflow::TensorSliceProto::Extent* extent = slice->add_extent();
      if (d == 0) {
        extent->set_start(s.start);
        extent->set_length(s.length);
      }
    }
  }
  return proto.SerializeAsString();
}

StatusOr<ShardedEntry> ParseShardedEntry(std::string_view bytes,
                                         std::string_view where,
                                         std::string_view key) {
  tensorflow::BundleEntryProto proto;
  auto bad = [&](std::string_view why) {
    return DataLossError(StrCat(where, ": entry \"", key, "\": ", why));
  };
  if (!proto.ParseFromArray(bytes.data(), int(bytes.size()))) {
    return bad("not a BundleEntryProto");
  }
  ShardedEntry e;
  const int dtype = int(proto.dtype());
  if (dtype != int(TfDtype::kFloat) && dtype != int(TfDtype::kUint8) &&
      dtype != int(TfDtype::kInt64)) {
    return bad(StrCat("data type ", dtype, " is not float, uint8 or int64"));
  }
  e.dtype = TfDtype(dtype);
  for (const auto& dim : proto.shape().dim()) {
    if (dim.size() < 0) return bad("a negative dimension");
    e.shape.push_back(dim.size());
  }
  e.shard = proto.shard_id();
  e.offset = proto.offset();
  e.size = proto.size();
  e.crc32c = proto.crc32c();
  if (e.offset < 0 || e.size < 0) return bad("a negative offset or size");
  for (const auto& slice : proto.slices()) {
    if (slice.extent_size() != int(e.shape.size()) || e.shape.empty()) {
      return bad("a slice of another rank than the tensor");
    }
    for (int d = 1; d < slice.extent_size(); ++d) {
      if (slice.extent(d).has_length_case() !=
          tensorflow::TensorSliceProto::Extent::HAS_LENGTH_NOT_SET) {
        return bad("a slice of a dimension other than the first");
      }
    }
    const auto& first = slice.extent(0);
    ShardedEntry::Slice s{first.start(), first.length()};
    if (first.has_length_case() ==
        tensorflow::TensorSliceProto::Extent::HAS_LENGTH_NOT_SET) {
      s = {0, e.shape[0]};
    }
    if (s.start < 0 || s.length < 0 || s.start > e.shape[0] ||
        s.length > e.shape[0] - s.start) {
      return bad("a slice out of the tensor's rows");
    }
    e.slices.push_back(s);
  }
  return e;
}

std::string ShardedHeader(int num_shards) {
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  return header.SerializeAsString();
}

StatusOr<int> ParseShardedHeader(std::string_view bytes,
                                 std::string_view where) {
  tensorflow::BundleHeaderProto header;
  if (!header.ParseFromArray(bytes.data(), int(bytes.size())) ||
      header.num_shards() < 1 ||
      header.endianness() != tensorflow::BundleHeaderProto::LITTLE) {
    return DataLossError(
        StrCat(where, ": malformed bundle header (or a big-endian bundle)"));
  }
  return header.num_shards();
}

std::string EncodeTensorNameSlice(std::string_view name, int rank,
                                  int64_t start, int64_t length) {
  std::string out;
  WriteNumIncreasing(&out, 0);
  WriteString(&out, name);
  WriteNumIncreasing(&out, uint64_t(rank));
  for (int d = 0; d < rank; ++d) {
    // A whole dimension is start 0, length -1.
    WriteSignedNumIncreasing(&out, d == 0 ? start : 0);
    WriteSignedNumIncreasing(&out, d == 0 ? length : -1);
  }
  return out;
}

}  // namespace dtf::runtime
