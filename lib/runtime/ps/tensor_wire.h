// Messages that carry tensor pieces (rpc::StepMessage, rpc::PullMessage), in
// protobuf's wire format but built and read without copying the pieces'
// values through std::string:
//   WireWriter  lays a message out as grpc::Slices: the small fields
//               serialized, each piece's values referenced where they lie
//               (or written once, straight into the outgoing slice).
//   DecodePieces walks a received grpc::ByteBuffer's slices: every field but
//               the pieces is handed back as bytes to parse with the
//               generated classes; each piece as a WirePiece whose values
//               are read in place or copied straight from the slices to
//               where they belong.
// What WireWriter makes parses with the generated classes, and DecodePieces
// reads what they serialize (fields in any order, packed or not); malformed
// input gives a Status, never a read past the buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "lib/base/status.h"
#include "proto/dtf.pb.h"

namespace dtf::runtime {

// Field numbers of the repeated TensorPiece in the messages that carry them.
inline constexpr int kStepGradientsField = 3;  // rpc::StepMessage.gradients
inline constexpr int kPullPiecesField = 2;     // rpc::PullMessage.pieces

class WireWriter {
 public:
  // Appends fields already in wire format (a SerializeToString of the same
  // message type holding only them).
  void AppendSerialized(std::string_view bytes);
  // Appends a TensorPiece in field `field`: `meta`'s fields (its values must
  // be empty) and then `values`, referenced, not copied.
  void AppendPiece(int field, const rpc::TensorPiece& meta, grpc::Slice values);
  // As AppendPiece with `bytes` values left for the caller to write at the
  // returned address (valid until Finish).
  char* AppendPieceSpace(int field, const rpc::TensorPiece& meta, size_t bytes);
  // Bytes appended so far.
  int64_t size() const { return size_; }
  // The message; the writer is empty again.
  grpc::ByteBuffer Finish();

 private:
  void Flush();

  std::string pending_;  // small fields not yet in a slice
  std::vector<grpc::Slice> slices_;
  int64_t size_ = 0;
};

// A slice holding `bytes` without copying them (freed with the slice).
grpc::Slice SliceOwning(std::string bytes);

// A run of bytes inside a received message, possibly across slices.
class WireBytes {
 public:
  WireBytes() = default;
  WireBytes(const std::vector<grpc::Slice>* slices, size_t index, size_t offset,
            size_t size)
      : slices_(slices), index_(index), offset_(offset), size_(size) {}
  size_t size() const { return size_; }
  // Copies all size() bytes to `dst`.
  void CopyTo(void* dst) const;
  // The bytes' address when they lie in one slice (or are none); nullptr
  // when they cross slices.
  const char* Contiguous() const;

 private:
  const std::vector<grpc::Slice>* slices_ = nullptr;
  size_t index_ = 0, offset_ = 0, size_ = 0;
};

// A TensorPiece as read off the wire; `values` points into the message.
struct WirePiece {
  std::string name;
  std::vector<int64_t> shape;
  int64_t row_offset = 0;
  int64_t rows = 0;
  std::vector<int64_t> ids;
  std::string slot;
  WireBytes values;
};

// OK when the piece holds rows x cols floats (ids.size() rows when sparse),
// in checked arithmetic; InvalidArgument naming the variable otherwise (as
// CheckPiece does for rpc::TensorPiece).
Status CheckWirePiece(const WirePiece& piece, int64_t cols);

// Reads `buffer` as a message whose field `piece_field` is a repeated
// TensorPiece: calls on_piece for each piece in order (stopping at its first
// error, which is returned) and appends every other field, in wire format,
// to `rest`. DataLoss when the bytes are no valid message.
Status DecodePieces(const grpc::ByteBuffer& buffer, int piece_field,
                    std::string* rest,
                    const std::function<Status(const WirePiece&)>& on_piece);
// As above, on a message's slices (ByteBuffer::Dump); the pieces' values
// point into `slices`, valid while it lives unchanged.
Status DecodePieces(const std::vector<grpc::Slice>& slices, int piece_field,
                    std::string* rest,
                    const std::function<Status(const WirePiece&)>& on_piece);

}  // namespace dtf::runtime
