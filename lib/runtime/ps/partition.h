// How variables are spread over the parameter servers (DESIGN.md, Runtime):
// every variable is a matrix [rows, cols] (a vector [n] is [n, 1]). Dense
// variables are split into contiguous row ranges, one per PS; sparse ones
// (embedding and wide weight tables) by row id: PS p holds the rows with
// id % num_ps == p, at local row id / num_ps. So a table far larger than
// one PS is spread evenly, and a batch's rows go where their ids say.
#pragma once

#include <cstdint>
#include <utility>

namespace dtf::runtime {

struct Partition {
  int num_ps = 1;

  // Rows [first, second) of a dense variable of `rows` rows on PS `p`.
  std::pair<int64_t, int64_t> DenseRange(int64_t rows, int p) const {
    return {rows * p / num_ps, rows * (p + 1) / num_ps};
  }
  int Owner(int64_t id) const { return static_cast<int>(id % num_ps); }
  int64_t LocalRow(int64_t id) const { return id / num_ps; }
  int64_t GlobalRow(int64_t local, int p) const { return local * num_ps + p; }
  // Rows of a sparse variable of `rows` rows held by PS `p`.
  int64_t SparseRows(int64_t rows, int p) const {
    return rows > p ? (rows - p + num_ps - 1) / num_ps : 0;
  }
};

}  // namespace dtf::runtime
