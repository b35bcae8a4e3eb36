#include "lib/runtime/ps/tensor_wire.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// The message's bytes in one string.
std::string Flat(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` cut into slices at `cuts` (offsets), as a received buffer may be.
grpc::ByteBuffer Sliced(const std::string& bytes, std::vector<size_t> cuts) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  cuts.push_back(bytes.size());
  for (size_t cut : cuts) {
    slices.emplace_back(bytes.data() + at, cut - at);
    at = cut;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

struct Decoded {
  std::string rest;
  std::vector<WirePiece> pieces;
  std::vector<std::vector<float>> values;
};

Status Decode(const grpc::ByteBuffer& buffer, int field, Decoded* out) {
  return DecodePieces(buffer, field, &out->rest, [&](const WirePiece& p) {
    out->pieces.push_back(p);
    std::vector<float>& v = out->values.emplace_back(p.values.size() / 4);
    p.values.CopyTo(v.data());
    return OkStatus();
  });
}

TEST(TensorWire, WrittenStepParsesWithTheGeneratedClasses) {
  rpc::StepMessage head;
  head.mutable_push()->set_worker(3);
  head.mutable_push()->set_step(-7);
  head.mutable_push()->set_loss(0.25);
  head.mutable_pull()->add_dense("w");
  head.mutable_pull()->set_min_step(9);
  WireWriter writer;
  writer.AppendSerialized(head.SerializeAsString());
  rpc::TensorPiece meta;
  meta.set_name("emb");
  meta.add_shape(100);
  meta.add_shape(3);
  meta.set_rows(2);
  meta.add_ids(5);
  meta.add_ids(-1);
  meta.set_slot("m");
  const std::vector<float> v = {1, 2, 3, 4, 5, 6.5f};
  writer.AppendPiece(kStepGradientsField, meta, SliceOwning(Floats(v)));
  rpc::TensorPiece dense;
  dense.set_name("b");
  dense.set_row_offset(4);
  dense.set_rows(1);
  float* at = reinterpret_cast<float*>(
      writer.AppendPieceSpace(kStepGradientsField, dense, 4));
  const float seven = 7;
  std::memcpy(at, &seven, 4);
  rpc::TensorPiece empty;
  empty.set_name("e");
  writer.AppendPiece(kStepGradientsField, empty, grpc::Slice());
  const int64_t size = writer.size();
  const std::string bytes = Flat(writer.Finish());
  EXPECT_EQ(int64_t(bytes.size()), size);

  rpc::StepMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.push().worker(), 3);
  EXPECT_EQ(parsed.push().step(), -7);
  EXPECT_EQ(parsed.pull().min_step(), 9);
  ASSERT_EQ(parsed.gradients_size(), 3);
  const rpc::TensorPiece& p = parsed.gradients(0);
  EXPECT_EQ(p.name(), "emb");
  EXPECT_EQ(p.shape_size(), 2);
  EXPECT_EQ(p.ids(1), -1);
  EXPECT_EQ(p.slot(), "m");
  EXPECT_EQ(p.values(), Floats(v));
  EXPECT_EQ(parsed.gradients(1).row_offset(), 4);
  EXPECT_EQ(parsed.gradients(1).values(), Floats({7}));
  EXPECT_EQ(parsed.gradients(2).name(), "e");
  EXPECT_TRUE(parsed.gradients(2).values().empty());
}

TEST(TensorWire, DecodesWhatTheGeneratedClassesWriteAcrossAnySlices) {
  rpc::PullMessage message;
  message.mutable_header()->set_global_step(12);
  message.mutable_header()->set_applied(true);
  (*message.mutable_header()->mutable_slot_steps())["w"] = 4;
  std::vector<float> v(257);  // an odd size
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f - 3;
  rpc::TensorPiece* p = message.add_pieces();
  p->set_name("w");
  p->add_shape(257);
  p->set_row_offset(-2);
  p->set_rows(257);
  p->set_values(Floats(v));
  rpc::TensorPiece* q = message.add_pieces();
  q->set_name("t");
  q->set_rows(2);
  q->add_ids(1);
  q->add_ids(1LL << 40);
  q->set_values(Floats({1.5f, -2}));
  const std::string bytes = message.SerializeAsString();

  // Every cut into two, some into many (mid-varint, mid-float).
  std::vector<std::vector<size_t>> cuts;
  for (size_t c = 0; c <= bytes.size(); c += 7) cuts.push_back({c});
  cuts.push_back({1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610});
  cuts.push_back({0, 0, 0});
  for (const std::vector<size_t>& cut : cuts) {
    Decoded d;
    ASSERT_TRUE(Decode(Sliced(bytes, cut), kPullPiecesField, &d).ok());
    rpc::PullMessage rest;
    ASSERT_TRUE(rest.ParseFromString(d.rest));
    EXPECT_EQ(rest.header().global_step(), 12);
    EXPECT_EQ(rest.header().slot_steps().at("w"), 4);
    EXPECT_EQ(rest.pieces_size(), 0);
    ASSERT_EQ(d.pieces.size(), 2u);
    EXPECT_EQ(d.pieces[0].name, "w");
    EXPECT_EQ(d.pieces[0].row_offset, -2);
    EXPECT_EQ(d.pieces[0].shape, std::vector<int64_t>{257});
    EXPECT_TRUE(CheckWirePiece(d.pieces[0], 1).ok());
    EXPECT_EQ(d.values[0], v);
    EXPECT_EQ(d.pieces[1].ids, (std::vector<int64_t>{1, 1LL << 40}));
    EXPECT_EQ(d.values[1], (std::vector<float>{1.5f, -2}));
    EXPECT_TRUE(CheckWirePiece(d.pieces[1], 1).ok());
  }
}

TEST(TensorWire, ValuesInOneSliceAreSeenInPlace) {
  rpc::PullMessage message;
  message.add_pieces()->set_values(Floats({1, 2, 3}));
  message.add_pieces()->set_values(Floats({4, 5}));
  const std::string bytes = message.SerializeAsString();
  // The first piece's values lie in the first slice, the second's cross.
  const size_t cut = bytes.size() - 3;
  std::vector<grpc::Slice> slices = {grpc::Slice(bytes.data(), cut),
                                     grpc::Slice(bytes.data() + cut, 3)};
  std::vector<const char*> at;
  std::string rest;
  ASSERT_TRUE(
      DecodePieces(slices, kPullPiecesField, &rest, [&](const WirePiece& p) {
        at.push_back(p.values.Contiguous());
        return OkStatus();
      }).ok());
  ASSERT_EQ(at.size(), 2u);
  ASSERT_NE(at[0], nullptr);
  EXPECT_EQ(std::string(at[0], 12), Floats({1, 2, 3}));
  EXPECT_EQ(at[0], reinterpret_cast<const char*>(slices[0].begin()) +
                       (bytes.find(Floats({1, 2, 3}))));
  EXPECT_EQ(at[1], nullptr);
}

TEST(TensorWire, UnknownFieldsAndUnpackedIdsAreRead) {
  // A piece with an unknown fixed32 and fixed64 field, unpacked ids.
  std::string piece;
  piece += char(0x0a);  // name
  piece += char(1);
  piece += 'x';
  piece += char((5 << 3) | 0);  // ids, unpacked
  piece += char(9);
  piece += char((5 << 3) | 0);
  piece += char(11);
  piece += char((12 << 3) | 5);  // unknown fixed32
  piece += std::string(4, '\0');
  piece += char((13 << 3) | 1);  // unknown fixed64
  piece += std::string(8, '\0');
  std::string bytes;
  bytes += char((2 << 3) | 2);
  bytes += char(piece.size());
  bytes += piece;
  Decoded d;
  ASSERT_TRUE(Decode(Sliced(bytes, {3}), kPullPiecesField, &d).ok());
  ASSERT_EQ(d.pieces.size(), 1u);
  EXPECT_EQ(d.pieces[0].name, "x");
  EXPECT_EQ(d.pieces[0].ids, (std::vector<int64_t>{9, 11}));
}

TEST(TensorWire, MalformedInputIsRefusedWithAStatus) {
  rpc::PullMessage message;
  message.mutable_header()->set_global_step(1);
  rpc::TensorPiece* p = message.add_pieces();
  p->set_name("w");
  p->add_ids(3);
  p->set_values(Floats({1, 2, 3}));
  const std::string good = message.SerializeAsString();
  // Every truncation is refused (or, cut at a field boundary, decodes).
  for (size_t n = 0; n < good.size(); ++n) {
    Decoded d;
    Status st =
        Decode(Sliced(good.substr(0, n), {n / 2}), kPullPiecesField, &d);
    if (!st.ok()) {
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
    }
  }
  std::vector<std::string> bad = {
      std::string("\x12\x7f", 2),              // a piece longer than the rest
      std::string("\x12\x02\x32\x09", 4),      // values longer than the piece
      std::string("\x12\x01\x0b", 3),          // a group inside a piece
      std::string("\x0b", 1),                  // a group
      std::string("\x00", 1),                  // field 0
      std::string("\x12\x01\x2a", 3),          // packed ids without a length
      std::string(11, '\xff'),                 // a varint of 11 bytes
      std::string("\x12\x03\x2a\x01\x80", 5),  // a packed id cut short
  };
  for (const std::string& b : bad) {
    Decoded d;
    Status st = Decode(Sliced(b, {1}), kPullPiecesField, &d);
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << b.size();
  }
  // A piece whose sizes do not add up is refused by the check.
  WirePiece w;
  w.name = "w";
  w.rows = 2;
  EXPECT_EQ(CheckWirePiece(w, 3).code(), absl::StatusCode::kInvalidArgument);
  w.rows = int64_t(1) << 62;
  EXPECT_EQ(CheckWirePiece(w, 8).code(), absl::StatusCode::kInvalidArgument);
  w.rows = 1;
  w.ids = {1, 2};
  EXPECT_EQ(CheckWirePiece(w, 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorWire, AnErrorFromAPieceStopsTheDecode) {
  rpc::PullMessage message;
  message.add_pieces()->set_name("a");
  message.add_pieces()->set_name("b");
  int calls = 0;
  std::string rest;
  Status st = DecodePieces(Sliced(message.SerializeAsString(), {}),
                           kPullPiecesField, &rest, [&](const WirePiece&) {
                             ++calls;
                             return InvalidArgumentError("no");
                           });
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace dtf::runtime
