#include "lib/runtime/ps/tensor_pieces.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "lib/base/strings.h"

namespace dtf::runtime {

static_assert(std::endian::native == std::endian::little,
              "pieces carry little-endian floats");

namespace {

int64_t RowsPerPiece(int64_t cols) {
  return std::max<int64_t>(1,
                           kMaxPieceBytes / (4 * std::max<int64_t>(cols, 1)));
}

rpc::TensorPiece* NewPiece(const std::string& name,
                           const std::vector<int64_t>& shape,
                           std::vector<rpc::TensorPiece>* out) {
  rpc::TensorPiece& p = out->emplace_back();
  p.set_name(name);
  for (int64_t d : shape) p.add_shape(d);
  return &p;
}

}  // namespace

int64_t PieceCols(const std::vector<int64_t>& shape) {
  int64_t cols = 1;
  for (size_t i = 1; i < shape.size(); ++i) cols *= shape[i];
  return cols;
}

void AppendDensePieces(const std::string& name,
                       const std::vector<int64_t>& shape, const float* data,
                       int64_t rows, int64_t cols, int64_t row_offset,
                       std::vector<rpc::TensorPiece>* out) {
  const int64_t step = RowsPerPiece(cols);
  for (int64_t r = 0; r < rows || (r == 0 && rows == 0); r += step) {
    const int64_t n = std::min(step, rows - r);
    rpc::TensorPiece* p = NewPiece(name, shape, out);
    p->set_row_offset(row_offset + r);
    p->set_rows(n);
    p->set_values(std::string(reinterpret_cast<const char*>(data + r * cols),
                              size_t(n * cols) * 4));
    if (rows == 0) break;
  }
}

void AppendSparsePieces(const std::string& name,
                        const std::vector<int64_t>& shape, const int64_t* ids,
                        const float* rows, int64_t n, int64_t cols,
                        std::vector<rpc::TensorPiece>* out) {
  const int64_t step = RowsPerPiece(cols);
  for (int64_t r = 0; r < n; r += step) {
    const int64_t k = std::min(step, n - r);
    rpc::TensorPiece* p = NewPiece(name, shape, out);
    p->set_rows(k);
    p->mutable_ids()->Add(ids + r, ids + r + k);
    p->set_values(std::string(reinterpret_cast<const char*>(rows + r * cols),
                              size_t(k * cols) * 4));
  }
}

Status CheckPiece(const rpc::TensorPiece& piece, int64_t cols) {
  const int64_t rows = piece.ids_size() > 0 ? piece.ids_size() : piece.rows();
  // rows x cols x 4 in checked arithmetic: a piece claiming 2^62 rows must
  // not wrap around to the size it carries.
  int64_t bytes = 0;
  const bool overflow = __builtin_mul_overflow(rows, cols, &bytes) ||
                        __builtin_mul_overflow(bytes, int64_t{4}, &bytes);
  if (rows != piece.rows() || rows < 0 || cols < 0 || overflow ||
      int64_t(piece.values().size()) != bytes) {
    return InvalidArgumentError(
        StrCat("variable \"", piece.name(), "\": a piece of ", piece.rows(),
               " rows holds ", piece.values().size(), " bytes, expected ",
               overflow ? std::string("more than 2^63") : StrCat(bytes)));
  }
  return OkStatus();
}

Status ReadPiece(const rpc::TensorPiece& piece, int64_t cols, float* dst) {
  DTF_RETURN_IF_ERROR(CheckPiece(piece, cols));
  if (!piece.values().empty()) {
    std::memcpy(dst, piece.values().data(), piece.values().size());
  }
  return OkStatus();
}

Status AddPiece(const rpc::TensorPiece& piece, int64_t cols, float scale,
                float* dst) {
  DTF_RETURN_IF_ERROR(CheckPiece(piece, cols));
  // In blocks through an aligned buffer on the stack: the bytes of a
  // message carry no float alignment, the block stays in L1, and a loop of
  // a fixed count over it is vectorized at -O2.
  constexpr size_t kBlock = 1024;
  alignas(64) float block[kBlock];
  const char* src = piece.values().data();
  const size_t n = piece.values().size() / 4;
  size_t at = 0;
  for (; at + kBlock <= n; at += kBlock) {
    std::memcpy(block, src + at * 4, sizeof(block));
    float* out = dst + at;
    for (size_t i = 0; i < kBlock; ++i) out[i] += scale * block[i];
  }
  std::memcpy(block, src + at * 4, (n - at) * 4);
  for (size_t i = 0; at + i < n; ++i) dst[at + i] += scale * block[i];
  return OkStatus();
}

}  // namespace dtf::runtime
