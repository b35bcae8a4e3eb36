// TensorFlow's tensor bundle (the checkpoint format of tf.train.Checkpoint
// and of a SavedModel's variables/): PREFIX.index, a LevelDB-format table
// mapping "" to a BundleHeaderProto and each tensor's name to a
// BundleEntryProto, and PREFIX.data-00000-of-00001 holding the tensors'
// bytes end to end (docs/formats/savedmodel.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/checkpoint/tf_table.h"

namespace dtf::runtime {

// One float32 tensor of a bundle.
struct TfBundleTensor {
  std::string name;
  const kernels::Tensor* value = nullptr;
};

// The two files of a single-shard bundle, as bytes.
struct TfBundleFiles {
  std::string index;
  std::string data;
};

// InvalidArgument for an empty or repeated name.
StatusOr<TfBundleFiles> MakeTfBundle(std::vector<TfBundleTensor> tensors);

// Writes PREFIX.data-00000-of-00001 (straight from the tensors) and then
// PREFIX.index. Callers write into a staging directory they rename once
// complete (lib/runtime/export/saved_model.h).
Status WriteTfBundle(const std::string& prefix,
                     std::vector<TfBundleTensor> tensors);

// The file names of a single-shard bundle at `prefix`.
std::string TfBundleIndexPath(std::string_view prefix);
std::string TfBundleDataPath(std::string_view prefix);

}  // namespace dtf::runtime
