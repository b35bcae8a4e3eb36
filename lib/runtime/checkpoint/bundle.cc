#include "lib/runtime/checkpoint/bundle.h"

#include <cstring>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "lib/data/little_endian.h"

namespace dtf::runtime {
namespace {

using bundle_format::EntryType;

std::string_view TypeName(EntryType type) {
  switch (type) {
    case EntryType::kFloat32:
      return "float32";
    case EntryType::kInt64:
      return "int64";
    case EntryType::kBytes:
      break;
  }
  return "bytes";
}

template <typename T>
std::string Pack(std::span<const T> values) {
  std::string out(values.size() * sizeof(T), '\0');
  if constexpr (sizeof(T) == 4) {
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      little_endian::Store32(out.data() + 4 * i, bits);
    }
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, &values[i], 8);
      little_endian::Store64(out.data() + 8 * i, bits);
    }
  }
  return out;
}

template <typename T>
void Unpack(std::string_view data, T* out) {
  const size_t n = data.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 4) {
      const uint32_t bits = little_endian::Load32(data.data() + 4 * i);
      std::memcpy(&out[i], &bits, 4);
    } else {
      const uint64_t bits = little_endian::Load64(data.data() + 8 * i);
      std::memcpy(&out[i], &bits, 8);
    }
  }
}

// Reads the fixed-size fields of an entry, tracking the offset.
class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& path)
      : bytes_(bytes), path_(path) {}
  size_t offset() const { return offset_; }
  Status Need(size_t n) const {
    if (bytes_.size() - offset_ >= n) return OkStatus();
    return DataLossError(StrCat(path_, ": truncated bundle at byte ", offset_));
  }
  std::string_view Take(size_t n) {
    std::string_view s = bytes_.substr(offset_, n);
    offset_ += n;
    return s;
  }
  uint64_t Take64() { return little_endian::Load64(Take(8).data()); }
  uint32_t Take32() { return little_endian::Load32(Take(4).data()); }

 private:
  std::string_view bytes_;
  const std::string& path_;
  size_t offset_ = 0;
};

}  // namespace

BundleEntry& Bundle::Slot(std::string name) {
  for (BundleEntry& e : entries_) {
    if (e.name == name) return e;
  }
  entries_.push_back(BundleEntry{std::move(name), EntryType::kFloat32, {}, {}});
  return entries_.back();
}

void Bundle::AddTensor(std::string name, const kernels::Tensor& tensor) {
  BundleEntry& e = Slot(std::move(name));
  e.type = EntryType::kFloat32;
  e.shape = tensor.shape();
  e.data = Pack(tensor.span());
}

void Bundle::AddFloats(std::string name, std::span<const float> values) {
  BundleEntry& e = Slot(std::move(name));
  e.type = EntryType::kFloat32;
  e.shape = {static_cast<int64_t>(values.size())};
  e.data = Pack(values);
}

void Bundle::AddInt64s(std::string name, std::span<const int64_t> values) {
  BundleEntry& e = Slot(std::move(name));
  e.type = EntryType::kInt64;
  e.shape = {static_cast<int64_t>(values.size())};
  e.data = Pack(values);
}

void Bundle::AddString(std::string name, std::string_view bytes) {
  BundleEntry& e = Slot(std::move(name));
  e.type = EntryType::kBytes;
  e.shape = {static_cast<int64_t>(bytes.size())};
  e.data = std::string(bytes);
}

const BundleEntry* Bundle::Find(std::string_view name) const {
  for (const BundleEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

StatusOr<const BundleEntry*> Bundle::Get(std::string_view name,
                                         EntryType type) const {
  const BundleEntry* e = Find(name);
  const std::string where = path_.empty() ? "bundle" : path_;
  if (e == nullptr) {
    return NotFoundError(StrCat(where, ": no entry \"", name, "\""));
  }
  if (e->type != type) {
    return InvalidArgumentError(StrCat(where, ": entry \"", name, "\" holds ",
                                       TypeName(e->type), ", not ",
                                       TypeName(type)));
  }
  return e;
}

StatusOr<kernels::Tensor> Bundle::GetTensor(std::string_view name) const {
  DTF_ASSIGN_OR_RETURN(const BundleEntry* e, Get(name, EntryType::kFloat32));
  kernels::Tensor t = kernels::Tensor::Empty(e->shape);
  Unpack(e->data, t.data());
  return t;
}

StatusOr<std::vector<float>> Bundle::GetFloats(std::string_view name) const {
  DTF_ASSIGN_OR_RETURN(const BundleEntry* e, Get(name, EntryType::kFloat32));
  std::vector<float> v(e->data.size() / 4);
  Unpack(e->data, v.data());
  return v;
}

StatusOr<std::vector<int64_t>> Bundle::GetInt64s(std::string_view name) const {
  DTF_ASSIGN_OR_RETURN(const BundleEntry* e, Get(name, EntryType::kInt64));
  std::vector<int64_t> v(e->data.size() / 8);
  Unpack(e->data, v.data());
  return v;
}

StatusOr<std::string> Bundle::GetString(std::string_view name) const {
  DTF_ASSIGN_OR_RETURN(const BundleEntry* e, Get(name, EntryType::kBytes));
  return e->data;
}

std::string Bundle::Serialize() const {
  std::string out(bundle_format::kHeaderSize, '\0');
  std::memcpy(out.data(), bundle_format::kMagic.data(), 8);
  little_endian::Store32(out.data() + 8, bundle_format::kVersion);
  little_endian::Store32(out.data() + 12, uint32_t(entries_.size()));
  char buf[8];
  for (const BundleEntry& e : entries_) {
    buf[0] = char(e.name.size() & 0xff);
    buf[1] = char(e.name.size() >> 8);
    out.append(buf, 2);
    out += e.name;
    out.push_back(char(e.type));
    out.push_back(char(e.shape.size()));
    for (int64_t d : e.shape) {
      little_endian::Store64(buf, uint64_t(d));
      out.append(buf, 8);
    }
    little_endian::Store64(buf, e.data.size());
    out.append(buf, 8);
    out += e.data;
  }
  little_endian::Store32(buf, crc32c::Mask(crc32c::Value(out)));
  out.append(buf, 4);
  return out;
}

Status Bundle::WriteFile(const std::string& path) const {
  return WriteFileAtomically(path, Serialize());
}

StatusOr<Bundle> Bundle::ReadFile(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return Parse(bytes, path);
}

StatusOr<Bundle> Bundle::Parse(std::string_view bytes, std::string path) {
  Bundle bundle;
  bundle.path_ = std::move(path);
  const std::string& where = bundle.path_;
  if (bytes.size() < bundle_format::kHeaderSize + bundle_format::kFooterSize ||
      bytes.substr(0, 8) != bundle_format::kMagic) {
    return DataLossError(StrCat(where, ": not a dtf tensor bundle"));
  }
  const size_t body = bytes.size() - bundle_format::kFooterSize;
  const uint32_t stored =
      crc32c::Unmask(little_endian::Load32(bytes.data() + body));
  if (crc32c::Value(bytes.data(), body) != stored) {
    return DataLossError(
        StrCat(where, ": checksum mismatch (the file is corrupt)"));
  }
  Cursor c(bytes.substr(0, body), where);
  c.Take(8);
  const uint32_t version = c.Take32();
  if (version != bundle_format::kVersion) {
    return DataLossError(StrCat(where, ": bundle version ", version,
                                " is not supported (this dtf reads ",
                                bundle_format::kVersion, ")"));
  }
  const uint32_t count = c.Take32();
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = c.offset();
    DTF_RETURN_IF_ERROR(c.Need(2));
    std::string_view len = c.Take(2);
    const size_t name_size = uint8_t(len[0]) | (size_t(uint8_t(len[1])) << 8);
    DTF_RETURN_IF_ERROR(c.Need(name_size + 2));
    BundleEntry e;
    e.name = std::string(c.Take(name_size));
    const auto type = static_cast<EntryType>(uint8_t(c.Take(1)[0]));
    const size_t rank = uint8_t(c.Take(1)[0]);
    if ((type != EntryType::kFloat32 && type != EntryType::kInt64 &&
         type != EntryType::kBytes) ||
        rank > bundle_format::kMaxRank) {
      return DataLossError(StrCat(where, ": bad entry header at byte ", at));
    }
    e.type = type;
    DTF_RETURN_IF_ERROR(c.Need(8 * rank + 8));
    uint64_t elements = 1;
    for (size_t d = 0; d < rank; ++d) {
      const auto dim = static_cast<int64_t>(c.Take64());
      if (dim < 0 ||
          (dim > 0 && elements > (uint64_t(1) << 40) / uint64_t(dim))) {
        return DataLossError(StrCat(where, ": bad shape at byte ", at));
      }
      elements *= uint64_t(dim);
      e.shape.push_back(dim);
    }
    const uint64_t size = c.Take64();
    const uint64_t element_size = type == EntryType::kFloat32 ? 4
                                  : type == EntryType::kInt64 ? 8
                                                              : 1;
    if (size != elements * element_size) {
      return DataLossError(
          StrCat(where, ": entry \"", e.name, "\" at byte ", at, " holds ",
                 size, " bytes, its shape needs ", elements * element_size));
    }
    DTF_RETURN_IF_ERROR(c.Need(size));
    e.data = std::string(c.Take(size));
    bundle.entries_.push_back(std::move(e));
  }
  if (c.offset() != body) {
    return DataLossError(StrCat(where, ": ", body - c.offset(),
                                " unexpected bytes after the last entry"));
  }
  return bundle;
}

}  // namespace dtf::runtime
