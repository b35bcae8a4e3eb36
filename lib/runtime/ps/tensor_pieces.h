// Variables on the wire: rows of a [rows, cols] float matrix as
// rpc::TensorPiece messages of at most kMaxPieceBytes each, so no message
// comes near gRPC's limits however large the variable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "proto/dtf.pb.h"

namespace dtf::runtime {

inline constexpr int64_t kMaxPieceBytes = 1 << 20;
// The most tensor bytes of one message on a Session stream (ps_stream.h);
// a step's pieces are packed into as many as they need, below gRPC's 4 MiB
// default receive limit.
inline constexpr int64_t kMaxStreamMessageBytes = kMaxPieceBytes;

// Rows [0, rows) of `data` ([rows, cols], row-major), which are the rows
// [row_offset, row_offset + rows) of the variable `name` of `shape`.
void AppendDensePieces(const std::string& name,
                       const std::vector<int64_t>& shape, const float* data,
                       int64_t rows, int64_t cols, int64_t row_offset,
                       std::vector<rpc::TensorPiece>* out);

// The rows `ids` (global row ids) of the variable: rows[i] is row ids[i].
void AppendSparsePieces(const std::string& name,
                        const std::vector<int64_t>& shape, const int64_t* ids,
                        const float* rows, int64_t n, int64_t cols,
                        std::vector<rpc::TensorPiece>* out);

// Columns per row of a variable of `shape` ([n] counts as [n, 1]).
int64_t PieceCols(const std::vector<int64_t>& shape);

// OK when the piece holds rows x cols floats (ids.size() rows when sparse),
// in checked arithmetic; InvalidArgument naming the variable otherwise.
Status CheckPiece(const rpc::TensorPiece& piece, int64_t cols);

// Checks that the piece holds rows x cols floats (ids.size() rows when
// sparse) and copies them to `dst` (rows x cols floats). InvalidArgument
// naming the variable otherwise.
Status ReadPiece(const rpc::TensorPiece& piece, int64_t cols, float* dst);

// As ReadPiece, but adds `scale` times the piece's values to `dst` instead
// of copying them there: pushed gradients are summed straight from their
// messages.
Status AddPiece(const rpc::TensorPiece& piece, int64_t cols, float scale,
                float* dst);

}  // namespace dtf::runtime
