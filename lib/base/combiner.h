// How an embedding reduces the several ids of one row to one vector, as
// TensorFlow's embedding_column and embedding_lookup_sparse name it: the one
// enum of the job file's `combiner` (lib/data/features.h), the model and the
// embedding kernels (lib/kernels/embedding.h, which defines each).
#pragma once

#include <string_view>

namespace dtf {

enum class Combiner { kSum, kMean, kSqrtN };

// "sum", "mean" or "sqrtn".
inline std::string_view CombinerName(Combiner combiner) {
  switch (combiner) {
    case Combiner::kSum:
      return "sum";
    case Combiner::kMean:
      return "mean";
    case Combiner::kSqrtN:
      return "sqrtn";
  }
  return "unknown";
}

}  // namespace dtf
