// A tensor bundle: named float32 tensors, int64 lists and byte strings in one
// checksummed file. Checkpoints and exported models are bundles
// (docs/formats/checkpoint.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/checkpoint/bundle_format.h"

namespace dtf::runtime {

struct BundleEntry {
  std::string name;
  bundle_format::EntryType type = bundle_format::EntryType::kFloat32;
  std::vector<int64_t> shape;  // element counts; {n} for int64s and bytes
  std::string data;            // little-endian elements, or the bytes
};

class Bundle {
 public:
  // Adders replace an entry of the same name.
  void AddTensor(std::string name, const kernels::Tensor& tensor);
  void AddFloats(std::string name, std::span<const float> values);
  void AddInt64s(std::string name, std::span<const int64_t> values);
  void AddString(std::string name, std::string_view bytes);

  // nullptr when absent.
  const BundleEntry* Find(std::string_view name) const;
  // The entry as a tensor / values: NotFound when absent, InvalidArgument
  // (naming `path()`, the entry and both types) when of another type.
  StatusOr<kernels::Tensor> GetTensor(std::string_view name) const;
  StatusOr<std::vector<float>> GetFloats(std::string_view name) const;
  StatusOr<std::vector<int64_t>> GetInt64s(std::string_view name) const;
  StatusOr<std::string> GetString(std::string_view name) const;

  const std::vector<BundleEntry>& entries() const { return entries_; }
  // The file it was read from, for messages; empty for a new bundle.
  const std::string& path() const { return path_; }
  // For a bundle read from elsewhere (a sharded checkpoint's prefix).
  void set_path(std::string path) { path_ = std::move(path); }

  std::string Serialize() const;
  // Writes the bundle to `path` atomically (temporary file, fsync, rename).
  Status WriteFile(const std::string& path) const;
  // Reads and verifies a bundle: DataLoss naming the file and the byte
  // offset for a bad magic, version, truncation or checksum.
  static StatusOr<Bundle> ReadFile(const std::string& path);
  static StatusOr<Bundle> Parse(std::string_view bytes, std::string path);

 private:
  BundleEntry& Slot(std::string name);
  StatusOr<const BundleEntry*> Get(std::string_view name,
                                   bundle_format::EntryType type) const;

  std::vector<BundleEntry> entries_;
  std::string path_;
};

}  // namespace dtf::runtime
