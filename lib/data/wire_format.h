// Protocol-buffer wire-format primitives for the messages dtf encodes by hand
// (tf.train.Example). Internal to lib/data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace dtf::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr uint32_t MakeTag(uint32_t field, WireType type) {
  return (field << 3) | type;
}

// Field numbers of proto/example.proto.
inline constexpr uint32_t kExampleFeatures = 1;  // Example.features
inline constexpr uint32_t kFeaturesFeature = 1;  // Features.feature (map)
inline constexpr uint32_t kMapKey = 1;           // map entry key
inline constexpr uint32_t kMapValue = 2;         // map entry value
inline constexpr uint32_t kBytesList = 1;        // Feature.bytes_list
inline constexpr uint32_t kFloatList = 2;        // Feature.float_list
inline constexpr uint32_t kInt64List = 3;        // Feature.int64_list
inline constexpr uint32_t kListValue = 1;        // *List.value

// Tags of the length-delimited Example fields that dtf writes and parses.
inline constexpr uint32_t kFeaturesTag =
    MakeTag(kExampleFeatures, kLengthDelimited);
inline constexpr uint32_t kEntryTag =
    MakeTag(kFeaturesFeature, kLengthDelimited);
inline constexpr uint32_t kKeyTag = MakeTag(kMapKey, kLengthDelimited);
inline constexpr uint32_t kValueTag = MakeTag(kMapValue, kLengthDelimited);
inline constexpr uint32_t kBytesListTag = MakeTag(kBytesList, kLengthDelimited);
inline constexpr uint32_t kFloatListTag = MakeTag(kFloatList, kLengthDelimited);
inline constexpr uint32_t kInt64ListTag = MakeTag(kInt64List, kLengthDelimited);
inline constexpr uint32_t kListValueTag = MakeTag(kListValue, kLengthDelimited);

inline constexpr size_t kMaxVarintSize = 10;

inline size_t VarintSize(uint64_t v) {
  // 1 + floor(bit_width / 7), with v == 0 taking one byte.
  int bits = 64 - __builtin_clzll(v | 1);
  return static_cast<size_t>((bits * 9 + 64) / 64);
}

// Writes `v` at `dst` (which has room for kMaxVarintSize bytes); returns the
// byte after it.
inline char* EncodeVarint(uint64_t v, char* dst) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}

inline void AppendVarint(uint64_t v, std::string* out) {
  char buf[kMaxVarintSize];
  out->append(buf, EncodeVarint(v, buf) - buf);
}

// Reads a varint at `*p` (not past `end`), advancing `*p`. False when the
// bytes end first or the varint is longer than 10 bytes.
inline bool DecodeVarint(const char** p, const char* end, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    auto byte = static_cast<unsigned char>(*(*p)++);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) {
      *v = result;
      return true;
    }
  }
  return false;
}

inline char* EncodeFixed32(uint32_t v, char* dst) {
  // Little-endian on the wire; dtf builds only for little-endian hosts.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  std::memcpy(dst, &v, 4);
  return dst + 4;
}

// Reads the 4 little-endian bytes at `src`.
inline uint32_t DecodeFixed32(const char* src) {
  uint32_t v;
  std::memcpy(&v, src, 4);
  return v;
}

}  // namespace dtf::wire
