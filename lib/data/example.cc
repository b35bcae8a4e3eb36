#include "lib/data/example.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/data/wire_format.h"
#include "lib/data/wire_reader.h"

namespace dtf {
namespace {

using Entry = std::pair<std::string, Feature>;
using wire::kLengthDelimited;
using wire::MakeTag;
using wire::VarintSize;

using wire::kBytesListTag;
using wire::kEntryTag;
using wire::kFeaturesTag;
using wire::kFloatListTag;
using wire::kInt64ListTag;
using wire::kKeyTag;
using wire::kValueTag;
// A bytes value, or a run of packed floats or int64s.
using wire::kListValueTag;
constexpr uint32_t kUnpackedFloatTag =
    MakeTag(wire::kListValue, wire::kFixed32);
constexpr uint32_t kUnpackedInt64Tag = MakeTag(wire::kListValue, wire::kVarint);

// ---- Encoding ----

bool IsStrictlySorted(const std::vector<Entry>& features) {
  for (size_t i = 1; i < features.size(); ++i) {
    if (!(features[i - 1].first < features[i].first)) return false;
  }
  return true;
}

// Size of the list message a Feature holds; `*packed` receives the size of
// the packed values inside it (0 for bytes lists).
size_t ListSize(const Feature& f, size_t* packed) {
  *packed = 0;
  switch (f.kind) {
    case Feature::Kind::kNone:
      return 0;
    case Feature::Kind::kBytes: {
      size_t n = 0;
      for (const std::string& s : f.bytes_list) {
        n += 1 + VarintSize(s.size()) + s.size();
      }
      return n;
    }
    case Feature::Kind::kFloat:
      *packed = 4 * f.float_list.size();
      break;
    case Feature::Kind::kInt64:
      for (int64_t v : f.int64_list) {
        *packed += VarintSize(static_cast<uint64_t>(v));
      }
      break;
  }
  return *packed == 0 ? 0 : 1 + VarintSize(*packed) + *packed;
}

// Sizes of one map entry's parts.
struct EntrySizes {
  size_t packed;   // packed values
  size_t list;     // list message
  size_t feature;  // Feature message
  size_t entry;    // entry message
};

EntrySizes SizeEntry(const Entry& e) {
  EntrySizes s;
  s.list = ListSize(e.second, &s.packed);
  s.feature = e.second.kind == Feature::Kind::kNone
                  ? 0
                  : 1 + VarintSize(s.list) + s.list;
  s.entry = 1 + VarintSize(e.first.size()) + e.first.size() + 1 +
            VarintSize(s.feature) + s.feature;
  return s;
}

char* WriteBytes(uint32_t tag, const char* data, size_t n, char* p) {
  *p++ = static_cast<char>(tag);
  p = wire::EncodeVarint(n, p);
  if (n > 0) std::memcpy(p, data, n);
  return p + n;
}

char* WriteEntry(const Entry& e, char* p) {
  const EntrySizes s = SizeEntry(e);
  const Feature& f = e.second;
  *p++ = static_cast<char>(kEntryTag);
  p = wire::EncodeVarint(s.entry, p);
  p = WriteBytes(kKeyTag, e.first.data(), e.first.size(), p);
  *p++ = static_cast<char>(kValueTag);
  p = wire::EncodeVarint(s.feature, p);
  if (f.kind == Feature::Kind::kNone) return p;
  static constexpr uint32_t kListTags[] = {0, kBytesListTag, kFloatListTag,
                                           kInt64ListTag};
  *p++ = static_cast<char>(kListTags[static_cast<int>(f.kind)]);
  p = wire::EncodeVarint(s.list, p);
  if (f.kind == Feature::Kind::kBytes) {
    for (const std::string& v : f.bytes_list) {
      p = WriteBytes(kListValueTag, v.data(), v.size(), p);
    }
    return p;
  }
  if (s.packed == 0) return p;
  *p++ = static_cast<char>(kListValueTag);
  p = wire::EncodeVarint(s.packed, p);
  if (f.kind == Feature::Kind::kFloat) {
    std::memcpy(p, f.float_list.data(), s.packed);
    return p + s.packed;
  }
  for (int64_t v : f.int64_list) {
    p = wire::EncodeVarint(static_cast<uint64_t>(v), p);
  }
  return p;
}

// ---- Decoding ----

// Recursion budgets left to each message (see wire::kMaxDepth).
constexpr int kFeaturesDepth = wire::kMaxDepth - 1;
constexpr int kEntryDepth = kFeaturesDepth - 1;
constexpr int kFeatureDepth = kEntryDepth - 1;
constexpr int kListDepth = kFeatureDepth - 1;

// Parses as protobuf does and appends the entries to `out` in wire order,
// reusing the elements (and their capacity) `out` already holds. Each Parse
// or Merge function consumes exactly [p, end).
class Decoder {
 public:
  Decoder(std::string_view data, std::vector<Entry>* out)
      : data_(data), reader_(data), out_(out) {}

  bool Run() {
    return ParseFields(
        data_.data(), data_.data() + data_.size(), wire::kMaxDepth,
        kFeaturesTag, [&](const char* p, const char* end) {
          return ParseFields(
              p, end, kFeaturesDepth, kEntryTag,
              [&](const char* q, const char* e) { return ParseEntry(q, e); });
        });
  }
  size_t count() const { return count_; }
  Status status() const {
    return DataLossError(
        absl::StrCat("byte ", reader_.error_offset(), ": ", reader_.error()));
  }

 private:
  // Hands each field tagged `tag` to `parse`, skipping all others.
  template <typename Fn>
  bool ParseFields(const char* p, const char* end, int depth, uint32_t tag,
                   Fn parse) {
    while (p < end) {
      const char* field = p;
      uint32_t t;
      if (!reader_.ReadTag(&p, end, &t)) return false;
      if (t == tag) {
        const char* field_end;
        if (!reader_.ReadLength(&p, end, &field_end) || !parse(p, field_end)) {
          return false;
        }
        p = field_end;
      } else if (!reader_.SkipField(t, field, &p, end, depth)) {
        return false;
      }
    }
    return true;
  }

  // A missing key reads as "", a missing value as a Feature with no list; a
  // repeated key replaces the earlier one, a repeated value merges into it.
  bool ParseEntry(const char* p, const char* end) {
    if (count_ == out_->size()) out_->emplace_back();
    Entry& e = (*out_)[count_++];
    e.first.clear();
    e.second.kind = Feature::Kind::kNone;
    e.second.float_list.clear();
    e.second.int64_list.clear();
    bytes_count_ = 0;
    while (p < end) {
      const char* field = p;
      uint32_t tag;
      if (!reader_.ReadTag(&p, end, &tag)) return false;
      if (tag == kKeyTag || tag == kValueTag) {
        const char* field_end;
        if (!reader_.ReadLength(&p, end, &field_end)) return false;
        if (tag == kKeyTag) {
          e.first.assign(p, field_end - p);
        } else if (!MergeFeature(p, field_end, &e.second)) {
          return false;
        }
        p = field_end;
      } else if (!reader_.SkipField(tag, field, &p, end, kEntryDepth)) {
        return false;
      }
    }
    e.second.bytes_list.resize(bytes_count_);
    return true;
  }

  // oneof: a list of another kind replaces the one held, a list of the same
  // kind merges into it.
  bool MergeFeature(const char* p, const char* end, Feature* f) {
    while (p < end) {
      const char* field = p;
      uint32_t tag;
      if (!reader_.ReadTag(&p, end, &tag)) return false;
      Feature::Kind kind;
      if (tag == kBytesListTag) {
        kind = Feature::Kind::kBytes;
      } else if (tag == kFloatListTag) {
        kind = Feature::Kind::kFloat;
      } else if (tag == kInt64ListTag) {
        kind = Feature::Kind::kInt64;
      } else {
        if (!reader_.SkipField(tag, field, &p, end, kFeatureDepth)) {
          return false;
        }
        continue;
      }
      const char* field_end;
      if (!reader_.ReadLength(&p, end, &field_end)) return false;
      if (f->kind != kind) {
        f->kind = kind;
        f->float_list.clear();
        f->int64_list.clear();
        bytes_count_ = 0;
      }
      if (!MergeList(p, field_end, f)) return false;
      p = field_end;
    }
    return true;
  }

  bool MergeList(const char* p, const char* end, Feature* f) {
    while (p < end) {
      const char* field = p;
      uint32_t tag;
      if (!reader_.ReadTag(&p, end, &tag)) return false;
      bool ok = true;
      if (tag == kListValueTag) {
        const char* field_end;
        if (!reader_.ReadLength(&p, end, &field_end)) return false;
        if (f->kind == Feature::Kind::kBytes) {
          AddBytes(p, field_end, f);
        } else if (f->kind == Feature::Kind::kFloat) {
          ok = AddPackedFloats(p, field_end, f);
        } else {
          ok = AddPackedInt64s(p, field_end, f);
        }
        p = field_end;
      } else if (tag == kUnpackedFloatTag && f->kind == Feature::Kind::kFloat) {
        uint32_t v;
        if (!reader_.ReadFixed32(&p, end, &v)) return false;
        f->float_list.push_back(std::bit_cast<float>(v));
      } else if (tag == kUnpackedInt64Tag && f->kind == Feature::Kind::kInt64) {
        uint64_t v;
        if (!reader_.ReadVarint(&p, end, &v)) return false;
        f->int64_list.push_back(static_cast<int64_t>(v));
      } else {
        ok = reader_.SkipField(tag, field, &p, end, kListDepth);
      }
      if (!ok) return false;
    }
    return true;
  }

  void AddBytes(const char* p, const char* end, Feature* f) {
    if (bytes_count_ < f->bytes_list.size()) {
      f->bytes_list[bytes_count_].assign(p, end - p);
    } else {
      f->bytes_list.emplace_back(p, end - p);
    }
    ++bytes_count_;
  }

  bool AddPackedFloats(const char* p, const char* end, Feature* f) {
    const size_t n = end - p;
    if (n % 4 != 0) {
      return reader_.Fail(p, "packed floats not a multiple of 4 bytes");
    }
    const size_t old = f->float_list.size();
    f->float_list.resize(old + n / 4);
    if (n > 0) std::memcpy(f->float_list.data() + old, p, n);
    return true;
  }

  bool AddPackedInt64s(const char* p, const char* end, Feature* f) {
    size_t n = 0;  // varints end at bytes below 0x80
    for (const char* q = p; q < end; ++q) {
      n += static_cast<unsigned char>(*q) < 0x80;
    }
    f->int64_list.reserve(f->int64_list.size() + n);
    while (p < end) {
      uint64_t v;
      if (!reader_.ReadVarint(&p, end, &v)) return false;
      f->int64_list.push_back(static_cast<int64_t>(v));
    }
    return true;
  }

  std::string_view data_;
  wire::Reader reader_;
  std::vector<Entry>* out_;
  size_t count_ = 0;        // elements of *out_ in use
  size_t bytes_count_ = 0;  // strings of the current bytes_list in use
};

const std::string& KeyOf(const Entry& e) { return e.first; }
const std::string& KeyOf(const Entry* e) { return e->first; }

// Sorts by key; of equal keys the last one stays.
template <typename T>
void SortKeepLast(std::vector<T>* v) {
  std::stable_sort(v->begin(), v->end(),
                   [](const T& a, const T& b) { return KeyOf(a) < KeyOf(b); });
  size_t kept = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    if (i + 1 < v->size() && KeyOf((*v)[i]) == KeyOf((*v)[i + 1])) continue;
    if (kept != i) std::swap((*v)[kept], (*v)[i]);
    ++kept;
  }
  v->resize(kept);
}

}  // namespace

const Feature* Example::Find(std::string_view key) const {
  auto it = std::lower_bound(
      features.begin(), features.end(), key,
      [](const Entry& e, std::string_view k) { return e.first < k; });
  if (it == features.end() || it->first != key) return nullptr;
  return &it->second;
}

std::string EncodeExample(const Example& example) {
  const std::vector<Entry>& fs = example.features;
  std::vector<const Entry*> order;  // stays empty when `fs` is in order
  if (!IsStrictlySorted(fs)) {
    order.reserve(fs.size());
    for (const Entry& e : fs) order.push_back(&e);
    SortKeepLast(&order);
  }
  auto for_each = [&](auto&& fn) {
    if (order.empty()) {
      for (const Entry& e : fs) fn(e);
    } else {
      for (const Entry* e : order) fn(*e);
    }
  };
  size_t body = 0;
  for_each([&](const Entry& e) {
    const size_t n = SizeEntry(e).entry;
    body += 1 + VarintSize(n) + n;
  });
  std::string out;
  if (body == 0) return out;
  out.resize(1 + VarintSize(body) + body);
  char* p = out.data();
  *p++ = static_cast<char>(kFeaturesTag);
  p = wire::EncodeVarint(body, p);
  for_each([&](const Entry& e) { p = WriteEntry(e, p); });
  assert(p == out.data() + out.size());
  return out;
}

Status DecodeExample(std::string_view data, Example* example) {
  Decoder decoder(data, &example->features);
  if (!data.empty() && !decoder.Run()) {
    example->features.clear();
    return decoder.status();
  }
  example->features.resize(decoder.count());
  if (!IsStrictlySorted(example->features)) SortKeepLast(&example->features);
  return OkStatus();
}

}  // namespace dtf
