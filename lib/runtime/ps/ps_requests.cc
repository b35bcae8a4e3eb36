#include "lib/runtime/ps/ps_requests.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf::runtime {

namespace {

// Compact of one input whose ids lie in [lo, hi], lo >= 0, over a range
// small enough for a bitmap: the ids present are marked, read back in
// order, and each id becomes the count of marked ids below it. O(ids +
// range / 64), and the same result as sorting.
void CompactByBitmap(kernels::IdTensor& ids, int64_t lo, int64_t hi,
                     std::vector<int64_t>* unique, std::vector<uint64_t>* bits,
                     std::vector<int64_t>* ranks) {
  const size_t words = size_t((hi - lo) / 64 + 1);
  bits->assign(words, 0);
  for (int64_t k = 0; k < ids.size(); ++k) {
    const uint64_t at = uint64_t(ids[k] - lo);
    (*bits)[at / 64] |= uint64_t{1} << (at % 64);
  }
  ranks->resize(words);
  unique->clear();
  for (size_t w = 0; w < words; ++w) {
    (*ranks)[w] = int64_t(unique->size());
    for (uint64_t word = (*bits)[w]; word != 0; word &= word - 1) {
      unique->push_back(lo + int64_t(w * 64) + std::countr_zero(word));
    }
  }
  for (int64_t k = 0; k < ids.size(); ++k) {
    const uint64_t at = uint64_t(ids[k] - lo);
    const uint64_t below = (*bits)[at / 64] & ((uint64_t{1} << (at % 64)) - 1);
    ids[k] = (*ranks)[at / 64] + std::popcount(below);
  }
}

}  // namespace

void Compact(ModelInputs* inputs, std::vector<std::vector<int64_t>>* unique) {
  unique->resize(inputs->ids.size());
  std::vector<uint64_t> bits;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < inputs->ids.size(); ++i) {
    kernels::IdTensor& ids = inputs->ids[i].ids;
    std::vector<int64_t>& u = (*unique)[i];
    if (ids.empty()) {
      u.clear();
      continue;
    }
    const auto [lo, hi] =
        std::minmax_element(ids.data(), ids.data() + ids.size());
    // A bitmap of at most 64 bits per id costs no more than the sort.
    if (*lo >= 0 && *hi - *lo < 64 * std::max<int64_t>(ids.size(), 64)) {
      CompactByBitmap(ids, *lo, *hi, &u, &bits, &ranks);
      continue;
    }
    u.assign(ids.data(), ids.data() + ids.size());
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (int64_t k = 0; k < ids.size(); ++k) {
      ids[k] = std::lower_bound(u.begin(), u.end(), ids[k]) - u.begin();
    }
  }
}

void PullRequests(Model& model, const std::vector<std::vector<int64_t>>* unique,
                  std::vector<PsClient::DenseVar>* dense,
                  std::vector<PsClient::SparseVar>* sparse,
                  const std::vector<std::vector<int64_t>>& full_shapes,
                  std::vector<kernels::OptimizerState>* states) {
  dense->clear();
  sparse->clear();
  auto& vars = model.variables();
  for (size_t v = 0; v < vars.size(); ++v) {
    kernels::OptimizerState* state =
        states != nullptr && vars[v].trainable ? &(*states)[v] : nullptr;
    if (!vars[v].sparse) {
      dense->push_back({vars[v].name, &vars[v].value, state});
      continue;
    }
    PsClient::SparseVar s;
    s.name = vars[v].name;
    s.rows = full_shapes[v][0];
    s.cols = PieceCols(full_shapes[v]);
    s.out = &vars[v].value;
    s.state = state;
    if (unique == nullptr) {
      s.all = true;
    } else {
      s.ids = &(*unique)[size_t(model.SparseInputOf(v))];
    }
    sparse->push_back(s);
  }
}

std::vector<std::vector<rpc::TensorPiece>> GradientPieces(
    const PsClient& ps, const Model& model, const std::vector<Gradient>& grads,
    const std::vector<kernels::Tensor>& before,
    const std::vector<std::vector<int64_t>>& unique,
    const std::vector<std::vector<int64_t>>& full_shapes) {
  const Partition& part = ps.partition();
  const auto& vars = model.variables();
  std::vector<std::vector<rpc::TensorPiece>> pieces(size_t(ps.num_ps()));
  for (size_t v = 0; v < vars.size(); ++v) {
    const std::vector<int64_t>& shape = full_shapes[v];
    const int64_t cols = PieceCols(shape);
    if (!vars[v].sparse) {
      const float* g = grads[v].dense.data();
      kernels::Tensor delta;
      if (!vars[v].trainable) {
        delta = vars[v].value.Clone();
        for (int64_t i = 0; i < delta.size(); ++i) delta[i] -= before[v][i];
        g = delta.data();
      }
      for (int p = 0; p < ps.num_ps(); ++p) {
        auto [b, e] = part.DenseRange(shape[0], p);
        if (e > b) {
          AppendDensePieces(vars[v].name, shape, g + b * cols, e - b, cols, b,
                            &pieces[size_t(p)]);
        }
      }
      continue;
    }
    const kernels::SparseGrad& sg = grads[v].sparse;
    const std::vector<int64_t>& u = unique[size_t(model.SparseInputOf(v))];
    std::vector<std::vector<int64_t>> ids(size_t(ps.num_ps()));
    std::vector<std::vector<float>> grad_rows(size_t(ps.num_ps()));
    for (int64_t k = 0; k < sg.ids.size(); ++k) {
      const int64_t id = u[size_t(sg.ids[k])];
      const auto p = size_t(part.Owner(id));
      ids[p].push_back(id);
      grad_rows[p].insert(grad_rows[p].end(), sg.rows.data() + k * cols,
                          sg.rows.data() + (k + 1) * cols);
    }
    for (int p = 0; p < ps.num_ps(); ++p) {
      AppendSparsePieces(vars[v].name, shape, ids[size_t(p)].data(),
                         grad_rows[size_t(p)].data(),
                         int64_t(ids[size_t(p)].size()), cols,
                         &pieces[size_t(p)]);
    }
  }
  return pieces;
}

}  // namespace dtf::runtime
