#include "lib/runtime/ps/tensor_wire.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "lib/base/strings.h"
#include "lib/runtime/ps/buffer_pool.h"
#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf::runtime {

static_assert(std::endian::native == std::endian::little,
              "pieces carry little-endian floats");

namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLength = 2,
  kFixed32 = 5,
};

constexpr int kPieceName = 1, kPieceShape = 2, kPieceRowOffset = 3,
              kPieceRows = 4, kPieceIds = 5, kPieceValues = 6, kPieceSlot = 7;

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(char(v | 0x80));
    v >>= 7;
  }
  out->push_back(char(v));
}

void PutTag(int field, WireType type, std::string* out) {
  PutVarint((uint64_t(field) << 3) | type, out);
}

// A read position in a message's slices, limited to `left` bytes.
class WireCursor {
 public:
  WireCursor(const std::vector<grpc::Slice>* slices, size_t left)
      : slices_(slices), left_(left) {
    SkipEmpty();
  }

  bool done() const { return left_ == 0; }
  size_t left() const { return left_; }

  bool Byte(uint8_t* b) {
    if (left_ == 0) return false;
    *b = (*slices_)[index_].begin()[offset_];
    Advance(1);
    return true;
  }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }

  bool Skip(size_t n) {
    if (n > left_) return false;
    Advance(n);
    return true;
  }

  bool Bytes(size_t n, std::string* out) {
    if (n > left_) return false;
    out->resize(n);
    Here(n).CopyTo(out->data());
    Advance(n);
    return true;
  }

  // The next n bytes (not consumed).
  WireBytes Here(size_t n) const {
    return WireBytes(slices_, index_, offset_, n);
  }
  // A cursor over the next n bytes (not consumed); n <= left().
  WireCursor Sub(size_t n) const {
    WireCursor c = *this;
    c.left_ = n;
    return c;
  }

 private:
  void Advance(size_t n) {
    left_ -= n;
    while (n > 0) {
      const size_t in_slice = (*slices_)[index_].size() - offset_;
      const size_t k = std::min(n, in_slice);
      offset_ += k;
      n -= k;
      if (offset_ == (*slices_)[index_].size() && n > 0) {
        ++index_;
        offset_ = 0;
      }
    }
    SkipEmpty();
  }
  void SkipEmpty() {
    while (left_ > 0 && offset_ == (*slices_)[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }

  const std::vector<grpc::Slice>* slices_;
  size_t index_ = 0, offset_ = 0, left_;
};

// Reads a packed or unpacked repeated int64 value of `type`.
bool ReadInt64s(WireCursor* c, uint32_t type, std::vector<int64_t>* out) {
  uint64_t v;
  if (type == kVarint) {
    if (!c->Varint(&v)) return false;
    out->push_back(int64_t(v));
    return true;
  }
  if (type != kLength || !c->Varint(&v) || v > c->left()) return false;
  WireCursor packed = c->Sub(size_t(v));
  c->Skip(size_t(v));
  while (!packed.done()) {
    uint64_t x;
    if (!packed.Varint(&x)) return false;
    out->push_back(int64_t(x));
  }
  return true;
}

// Skips a field's value of wire type `type`.
bool SkipValue(WireCursor* c, uint32_t type) {
  uint64_t v;
  switch (type) {
    case kVarint:
      return c->Varint(&v);
    case kFixed64:
      return c->Skip(8);
    case kFixed32:
      return c->Skip(4);
    case kLength:
      return c->Varint(&v) && v <= c->left() && c->Skip(size_t(v));
    default:
      return false;  // groups (deprecated) and invalid types
  }
}

bool ReadWirePiece(WireCursor c, WirePiece* piece) {
  while (!c.done()) {
    uint64_t tag;
    if (!c.Varint(&tag)) return false;
    const uint64_t field = tag >> 3;
    const uint32_t type = uint32_t(tag & 7);
    uint64_t v;
    bool ok;
    switch (field) {
      case kPieceName:
      case kPieceSlot:
        ok = type == kLength && c.Varint(&v) && v <= c.left() &&
             c.Bytes(size_t(v),
                     field == kPieceName ? &piece->name : &piece->slot);
        break;
      case kPieceShape:
        ok = ReadInt64s(&c, type, &piece->shape);
        break;
      case kPieceIds:
        ok = ReadInt64s(&c, type, &piece->ids);
        break;
      case kPieceRowOffset:
      case kPieceRows:
        ok = type == kVarint && c.Varint(&v);
        if (ok) (field == kPieceRows ? piece->rows : piece->row_offset) = v;
        break;
      case kPieceValues:
        ok = type == kLength && c.Varint(&v) && v <= c.left();
        if (ok) {
          piece->values = c.Here(size_t(v));
          c.Skip(size_t(v));
        }
        break;
      default:
        ok = SkipValue(&c, type);
    }
    if (!ok) return false;
  }
  return true;
}

// Memory for outgoing values of kMinPooledBytes to kMaxPieceBytes, kept
// for reuse once gRPC lets go of it.
constexpr size_t kMinPooledBytes = 64 << 10;
using WireBufferPool = BufferPool<size_t(kMaxPieceBytes), 64>;

}  // namespace

grpc::Slice SliceOwning(std::string bytes) {
  if (bytes.empty()) return grpc::Slice();
  auto* owned = new std::string(std::move(bytes));
  return grpc::Slice(
      owned->data(), owned->size(),
      [](void* p) { delete static_cast<std::string*>(p); }, owned);
}

void WireWriter::AppendSerialized(std::string_view bytes) {
  pending_.append(bytes);
  size_ += int64_t(bytes.size());
}

void WireWriter::Flush() {
  if (pending_.empty()) return;
  slices_.push_back(SliceOwning(std::move(pending_)));
  pending_.clear();
}

char* WireWriter::AppendPieceSpace(int field, const rpc::TensorPiece& meta,
                                   size_t bytes) {
  // Memory of its own (a small grpc::Slice keeps its bytes inline, where
  // they move with it).
  if (bytes >= kMinPooledBytes && bytes <= WireBufferPool::kBufferBytes) {
    char* at = nullptr;
    grpc::Slice slice = WireBufferPool::NewSlice(bytes, &at);
    AppendPiece(field, meta, std::move(slice));
    return at;
  }
  char* at = static_cast<char*>(std::malloc(std::max<size_t>(bytes, 1)));
  AppendPiece(field, meta, grpc::Slice(at, bytes, std::free));
  return at;
}

void WireWriter::AppendPiece(int field, const rpc::TensorPiece& meta,
                             grpc::Slice values) {
  const size_t before = pending_.size();
  std::string head;
  meta.AppendToString(&head);
  PutTag(kPieceValues, kLength, &head);
  PutVarint(values.size(), &head);
  PutTag(field, kLength, &pending_);
  PutVarint(head.size() + values.size(), &pending_);
  pending_.append(head);
  size_ += int64_t(pending_.size() - before + values.size());
  if (values.size() == 0) return;
  Flush();
  slices_.push_back(std::move(values));
}

grpc::ByteBuffer WireWriter::Finish() {
  Flush();
  grpc::ByteBuffer buffer(slices_.data(), slices_.size());
  slices_.clear();
  size_ = 0;
  return buffer;
}

void WireBytes::CopyTo(void* dst) const {
  char* out = static_cast<char*>(dst);
  size_t index = index_, offset = offset_, left = size_;
  while (left > 0) {
    const grpc::Slice& s = (*slices_)[index];
    const size_t k = std::min(left, s.size() - offset);
    std::memcpy(out, s.begin() + offset, k);
    out += k;
    left -= k;
    ++index;
    offset = 0;
  }
}

Status CheckWirePiece(const WirePiece& piece, int64_t cols) {
  const int64_t n_ids = int64_t(piece.ids.size());
  const int64_t rows = n_ids > 0 ? n_ids : piece.rows;
  int64_t bytes = 0;
  const bool overflow = __builtin_mul_overflow(rows, cols, &bytes) ||
                        __builtin_mul_overflow(bytes, int64_t{4}, &bytes);
  if (rows != piece.rows || rows < 0 || cols < 0 || overflow ||
      int64_t(piece.values.size()) != bytes) {
    return InvalidArgumentError(
        StrCat("variable \"", piece.name, "\": a piece of ", piece.rows,
               " rows holds ", piece.values.size(), " bytes, expected ",
               overflow ? std::string("more than 2^63") : StrCat(bytes)));
  }
  return OkStatus();
}

const char* WireBytes::Contiguous() const {
  static const char kNone = 0;
  if (size_ == 0) return &kNone;
  const grpc::Slice& s = (*slices_)[index_];
  if (s.size() - offset_ < size_) return nullptr;
  return reinterpret_cast<const char*>(s.begin()) + offset_;
}

Status DecodePieces(const grpc::ByteBuffer& buffer, int piece_field,
                    std::string* rest,
                    const std::function<Status(const WirePiece&)>& on_piece) {
  std::vector<grpc::Slice> slices;
  if (buffer.Valid() && !buffer.Dump(&slices).ok()) {
    return DataLossError("unreadable message buffer");
  }
  return DecodePieces(slices, piece_field, rest, on_piece);
}

Status DecodePieces(const std::vector<grpc::Slice>& slices, int piece_field,
                    std::string* rest,
                    const std::function<Status(const WirePiece&)>& on_piece) {
  size_t total = 0;
  for (const grpc::Slice& s : slices) total += s.size();
  WireCursor c(&slices, total);
  auto malformed = [] {
    return DataLossError("malformed message: not the protocol's wire format");
  };
  WirePiece piece;
  while (!c.done()) {
    uint64_t tag;
    if (!c.Varint(&tag) || (tag >> 3) == 0) return malformed();
    const uint32_t type = uint32_t(tag & 7);
    if (int64_t(tag >> 3) == piece_field && type == kLength) {
      uint64_t n;
      if (!c.Varint(&n) || n > c.left()) return malformed();
      piece = WirePiece();
      if (!ReadWirePiece(c.Sub(size_t(n)), &piece)) return malformed();
      c.Skip(size_t(n));
      DTF_RETURN_IF_ERROR(on_piece(piece));
      continue;
    }
    // Another field: its tag and value, copied to `rest`.
    WireCursor start = c;
    PutVarint(tag, rest);
    if (!SkipValue(&c, type)) return malformed();
    std::string value;
    start.Bytes(start.left() - c.left(), &value);
    rest->append(value);
  }
  return OkStatus();
}

}  // namespace dtf::runtime
