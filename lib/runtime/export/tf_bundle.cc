#include "lib/runtime/export/tf_bundle.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "proto/tensor_bundle.pb.h"

namespace dtf::runtime {
namespace {

std::string_view TfTensorBytes(const TfBundleTensor& t) {
  return std::string_view(reinterpret_cast<const char*>(t.value->data()),
                          static_cast<size_t>(t.value->size()) * sizeof(float));
}

// Sorts `tensors` by name and returns the index for their bytes laid end to
// end in that order.
StatusOr<std::string> MakeTfBundleIndex(std::vector<TfBundleTensor>* tensors) {
  std::sort(tensors->begin(), tensors->end(),
            [](const TfBundleTensor& a, const TfBundleTensor& b) {
              return a.name < b.name;
            });
  std::vector<std::pair<std::string, std::string>> entries;
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  entries.emplace_back("", header.SerializeAsString());
  int64_t offset = 0;
  for (size_t i = 0; i < tensors->size(); ++i) {
    const TfBundleTensor& t = (*tensors)[i];
    if (t.name.empty()) {
      return InvalidArgumentError("a bundle tensor has an empty name");
    }
    if (i > 0 && (*tensors)[i - 1].name == t.name) {
      return InvalidArgumentError(
          StrCat("two bundle tensors are named \"", t.name, "\""));
    }
    const std::string_view bytes = TfTensorBytes(t);
    tensorflow::BundleEntryProto entry;
    entry.set_dtype(tensorflow::DT_FLOAT);
    for (int64_t d : t.value->shape()) {
      entry.mutable_shape()->add_dim()->set_size(d);
    }
    entry.set_shard_id(0);
    entry.set_offset(offset);
    entry.set_size(static_cast<int64_t>(bytes.size()));
    entry.set_crc32c(crc32c::Mask(crc32c::Value(bytes)));
    offset += static_cast<int64_t>(bytes.size());
    entries.emplace_back(t.name, entry.SerializeAsString());
  }
  return MakeTfTable(entries);
}

}  // namespace

StatusOr<TfBundleFiles> MakeTfBundle(std::vector<TfBundleTensor> tensors) {
  TfBundleFiles files;
  DTF_ASSIGN_OR_RETURN(files.index, MakeTfBundleIndex(&tensors));
  for (const TfBundleTensor& t : tensors) files.data += TfTensorBytes(t);
  return files;
}

std::string TfBundleIndexPath(std::string_view prefix) {
  return StrCat(prefix, ".index");
}

std::string TfBundleDataPath(std::string_view prefix) {
  return StrCat(prefix, ".data-00000-of-00001");
}

Status WriteTfBundle(const std::string& prefix,
                     std::vector<TfBundleTensor> tensors) {
  DTF_ASSIGN_OR_RETURN(const std::string index, MakeTfBundleIndex(&tensors));
  // The data straight from the tensors, without a copy of them in memory.
  const std::string data_path = TfBundleDataPath(prefix);
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> data,
                       OpenWritableFile(data_path));
  for (const TfBundleTensor& t : tensors) {
    DTF_RETURN_IF_ERROR(data->Append(TfTensorBytes(t)));
  }
  DTF_RETURN_IF_ERROR(data->Sync());
  DTF_RETURN_IF_ERROR(data->Close());
  return WriteFileAtomically(TfBundleIndexPath(prefix), index);
}

}  // namespace dtf::runtime
