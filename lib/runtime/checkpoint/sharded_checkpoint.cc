#include "lib/runtime/checkpoint/sharded_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/crc32c.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/checkpoint/tf_table.h"

namespace dtf::runtime {
namespace fs = std::filesystem;
namespace {

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoToStatus(err, dir);
  return OkStatus();
}

// The step of a file of a sharded checkpoint ("model.ckpt-<step>.index",
// ".data-..." with or without the temporary suffix), and whether it is the
// index; nullopt for any other name.
std::optional<std::pair<int64_t, bool>> ShardedFileStep(std::string_view name) {
  const std::string head = StrCat(kShardedCheckpointName, "-");
  if (!name.starts_with(head)) return std::nullopt;
  name.remove_prefix(head.size());
  int64_t step = 0;
  auto [end, ec] =
      std::from_chars(name.data(), name.data() + name.size(), step);
  if (ec != std::errc() || end == name.data() || step < 0) return std::nullopt;
  const std::string_view rest(end, size_t(name.data() + name.size() - end));
  if (rest == ".index") return std::make_pair(step, true);
  if (rest.starts_with(".data-")) return std::make_pair(step, false);
  return std::nullopt;
}

// The merged entries of every shard, header first, sorted by key.
StatusOr<std::vector<std::pair<std::string, std::string>>> MergeIndex(
    const std::string& index_path,
    const std::vector<ShardedIndexEntries>& shards) {
  std::map<std::string, std::string> plain;
  std::map<std::string, ShardedEntry> sliced;
  for (const ShardedIndexEntries& shard : shards) {
    for (const auto& [key, bytes] : shard) {
      DTF_ASSIGN_OR_RETURN(ShardedEntry e,
                           ParseShardedEntry(bytes, index_path, key));
      if (e.slices.empty()) {
        if (!plain.emplace(key, bytes).second || sliced.count(key) != 0) {
          return FailedPreconditionError(
              StrCat(index_path, ": two shards wrote \"", key, "\""));
        }
        continue;
      }
      auto [it, added] = sliced.emplace(key, e);
      if (added) continue;
      if (it->second.shape != e.shape || it->second.dtype != e.dtype) {
        return FailedPreconditionError(StrCat(
            index_path, ": shards disagree on the shape of \"", key, "\""));
      }
      it->second.slices.insert(it->second.slices.end(), e.slices.begin(),
                               e.slices.end());
    }
  }
  for (auto& [key, e] : sliced) {
    if (plain.count(key) != 0) {
      return FailedPreconditionError(
          StrCat(index_path, ": two shards wrote \"", key, "\""));
    }
    std::sort(e.slices.begin(), e.slices.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    plain.emplace(key, SerializeShardedEntry(e));
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("", ShardedHeader(int(shards.size())));
  for (auto& [key, bytes] : plain) out.emplace_back(key, std::move(bytes));
  return out;
}

// TensorFlow's CheckpointState text (tf.train.latest_checkpoint reads it).
std::string StateFileText(const std::vector<ShardedGeneration>& newest_first) {
  std::string text;
  if (newest_first.empty()) return text;
  StrAppend(&text, "model_checkpoint_path: \"",
            fs::path(newest_first[0].prefix).filename().string(), "\"\n");
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) {
    StrAppend(&text, "all_model_checkpoint_paths: \"",
              fs::path(it->prefix).filename().string(), "\"\n");
  }
  return text;
}

// Removes the generations beyond `keep` (index first), and the data files
// of steps without an index (writes that never committed).
void Prune(const std::string& dir, int64_t keep, int64_t committed) {
  std::vector<ShardedGeneration> all = ListShardedCheckpoints(dir);
  std::error_code ec;
  for (size_t i = size_t(std::max<int64_t>(keep, 1)); i < all.size(); ++i) {
    if (all[i].step == committed) continue;
    fs::remove(ShardedIndexPath(all[i].prefix), ec);
  }
  std::vector<int64_t> kept;
  for (const ShardedGeneration& g : ListShardedCheckpoints(dir)) {
    kept.push_back(g.step);
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto step = ShardedFileStep(it->path().filename().string());
    if (!step || step->second) continue;
    if (std::find(kept.begin(), kept.end(), step->first) != kept.end()) {
      continue;
    }
    std::error_code remove_ec;
    fs::remove(it->path(), remove_ec);
  }
}

}  // namespace

Status CommitShardedBundle(const std::string& prefix,
                           const std::vector<ShardedIndexEntries>& shards) {
  const std::string dir = fs::path(prefix).parent_path().string();
  const std::string index_path = ShardedIndexPath(prefix);
  const int n = int(shards.size());
  std::error_code ec;
  for (int k = 0; k < n; ++k) {
    const std::string temp =
        StrCat(ShardedDataPath(prefix, k, n), kShardedTempSuffix);
    if (!fs::is_regular_file(temp, ec)) {
      return FailedPreconditionError(
          StrCat("cannot commit ", prefix, ": shard ", k, " of ", n,
                 " wrote no data file (", temp, " is missing)"));
    }
  }
  DTF_ASSIGN_OR_RETURN(const auto entries, MergeIndex(index_path, shards));
  // An earlier bundle at this prefix is taken away before its data files
  // are replaced: absent, never half old and half new.
  if (fs::exists(index_path, ec)) {
    fs::remove(index_path, ec);
    if (ec) return ErrnoToStatus(ec.value(), index_path);
    DTF_RETURN_IF_ERROR(SyncDirectory(dir));
  }
  for (int k = 0; k < n; ++k) {
    const std::string data = ShardedDataPath(prefix, k, n);
    fs::rename(StrCat(data, kShardedTempSuffix), data, ec);
    if (ec) {
      return ErrnoToStatus(
          ec.value(),
          StrCat("cannot rename ", data, kShardedTempSuffix, " to ", data));
    }
  }
  DTF_RETURN_IF_ERROR(SyncDirectory(dir));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(index_path, MakeTfTable(entries)));
  return SyncDirectory(dir);
}

Status CommitShardedCheckpoint(const std::string& dir, int64_t step,
                               const std::vector<ShardedIndexEntries>& shards,
                               int64_t keep) {
  DTF_RETURN_IF_ERROR(
      CommitShardedBundle(ShardedCheckpointPrefix(dir, step), shards));
  Prune(dir, keep, step);
  return WriteFileAtomically((fs::path(dir) / kShardedStateFile).string(),
                             StateFileText(ListShardedCheckpoints(dir)));
}

std::vector<ShardedGeneration> ListShardedCheckpoints(const std::string& dir) {
  struct Found {
    ShardedGeneration generation;
    fs::file_time_type time;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto step = ShardedFileStep(it->path().filename().string());
    if (!step || !step->second) continue;
    std::error_code time_ec;
    const fs::file_time_type time = it->last_write_time(time_ec);
    if (time_ec) continue;
    found.push_back(
        {{ShardedCheckpointPrefix(dir, step->first), step->first}, time});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.time != b.time) return a.time > b.time;
    return a.generation.step > b.generation.step;
  });
  std::vector<ShardedGeneration> out;
  for (Found& f : found) out.push_back(std::move(f.generation));
  return out;
}

StatusOr<std::unique_ptr<ShardedCheckpointReader>>
ShardedCheckpointReader::Open(std::string prefix) {
  std::unique_ptr<ShardedCheckpointReader> r(
      new ShardedCheckpointReader(std::move(prefix)));
  const std::string path = ShardedIndexPath(r->prefix_);
  DTF_ASSIGN_OR_RETURN(const std::string file, ReadFileToString(path));
  DTF_ASSIGN_OR_RETURN(const auto table, ParseTfTable(file, path));
  if (table.empty() || !table[0].first.empty()) {
    return DataLossError(StrCat(path, ": no bundle header"));
  }
  DTF_ASSIGN_OR_RETURN(r->num_shards_,
                       ParseShardedHeader(table[0].second, path));
  for (size_t i = 1; i < table.size(); ++i) {
    DTF_ASSIGN_OR_RETURN(
        ShardedEntry e,
        ParseShardedEntry(table[i].second, path, table[i].first));
    if (e.slices.empty() && (e.shard < 0 || e.shard >= r->num_shards_)) {
      return DataLossError(StrCat(path, ": entry \"", table[i].first,
                                  "\" names shard ", e.shard, " of ",
                                  r->num_shards_));
    }
    r->entries_.emplace(table[i].first, std::move(e));
  }
  return r;
}

const ShardedEntry* ShardedCheckpointReader::Find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

StatusOr<const RandomAccessFile*> ShardedCheckpointReader::Data(
    int shard) const {
  auto it = files_.find(shard);
  if (it == files_.end()) {
    DTF_ASSIGN_OR_RETURN(
        std::unique_ptr<RandomAccessFile> file,
        OpenRandomAccessFile(ShardedDataPath(prefix_, shard, num_shards_)));
    it = files_.emplace(shard, std::move(file)).first;
  }
  return it->second.get();
}

Status ShardedCheckpointReader::ReadRange(
    const ShardedEntry& e, std::string_view key, size_t chunk,
    const std::function<Status(int64_t, std::string_view)>& fn) const {
  DTF_ASSIGN_OR_RETURN(const RandomAccessFile* file, Data(e.shard));
  std::string buffer(std::min<size_t>(std::max<size_t>(chunk, 1),
                                      size_t(std::max<int64_t>(e.size, 1))),
                     '\0');
  uint32_t crc = 0;
  for (int64_t done = 0; done < e.size;) {
    const size_t want = std::min<size_t>(buffer.size(), size_t(e.size - done));
    size_t got = 0;
    DTF_RETURN_IF_ERROR(
        file->Read(uint64_t(e.offset + done), want, buffer.data(), &got));
    if (got != want) {
      return DataLossError(StrCat(file->name(), ": truncated: entry \"", key,
                                  "\" ends at byte ", e.offset + e.size));
    }
    crc = crc32c::Extend(crc, buffer.data(), got);
    DTF_RETURN_IF_ERROR(fn(done, std::string_view(buffer.data(), got)));
    done += int64_t(got);
  }
  if (crc32c::Mask(crc) != e.crc32c) {
    return DataLossError(StrCat(file->name(), ": checksum mismatch in entry \"",
                                key, "\" (bytes ", e.offset, " to ",
                                e.offset + e.size, ")"));
  }
  return OkStatus();
}

StatusOr<std::string> ShardedCheckpointReader::Read(
    std::string_view key) const {
  const ShardedEntry* e = Find(key);
  if (e == nullptr || !e->slices.empty()) {
    return NotFoundError(
        StrCat(ShardedIndexPath(prefix_), ": no entry \"", key, "\""));
  }
  std::string out;
  out.reserve(size_t(e->size));
  DTF_RETURN_IF_ERROR(
      ReadRange(*e, key, size_t(e->size), [&](int64_t, std::string_view bytes) {
        out.append(bytes);
        return OkStatus();
      }));
  return out;
}

Status ShardedCheckpointReader::StreamSlice(
    std::string_view key, const ShardedEntry::Slice& slice, size_t chunk_bytes,
    const std::function<Status(int64_t, std::string_view)>& chunk) const {
  const ShardedEntry* full = Find(key);
  if (full == nullptr) {
    return NotFoundError(
        StrCat(ShardedIndexPath(prefix_), ": no entry \"", key, "\""));
  }
  const std::string slice_key = EncodeTensorNameSlice(
      key, int(full->shape.size()), slice.start, slice.length);
  const ShardedEntry* e = Find(slice_key);
  if (e == nullptr || !e->slices.empty()) {
    return DataLossError(StrCat(ShardedIndexPath(prefix_), ": entry \"", key,
                                "\" lists rows [", slice.start, ", ",
                                slice.start + slice.length,
                                ") that it does not hold"));
  }
  int64_t row_bytes = e->dtype == TfDtype::kInt64   ? 8
                      : e->dtype == TfDtype::kUint8 ? 1
                                                    : 4;
  for (size_t d = 1; d < full->shape.size(); ++d) row_bytes *= full->shape[d];
  if (e->size != row_bytes * slice.length) {
    return DataLossError(StrCat(ShardedIndexPath(prefix_), ": rows [",
                                slice.start, ", ", slice.start + slice.length,
                                ") of \"", key, "\" hold ", e->size,
                                " bytes, not ", row_bytes * slice.length));
  }
  const size_t rows_per_chunk = std::max<size_t>(
      1, chunk_bytes / size_t(std::max<int64_t>(row_bytes, 1)));
  return ReadRange(*e, key, rows_per_chunk * size_t(row_bytes), chunk);
}

StatusOr<std::vector<ShardedCheckpointReader::SliceAt>>
ShardedCheckpointReader::FloatSlices(std::string_view key,
                                     int64_t* row_floats) const {
  const ShardedEntry* full = Find(key);
  if (full == nullptr || full->dtype != TfDtype::kFloat ||
      full->shape.empty()) {
    return NotFoundError(
        StrCat(ShardedIndexPath(prefix_), ": no float tensor \"", key, "\""));
  }
  *row_floats = 1;
  for (size_t d = 1; d < full->shape.size(); ++d) {
    *row_floats *= full->shape[d];
  }
  std::vector<SliceAt> out;
  if (full->slices.empty()) {
    out.push_back({{0, full->shape[0]}, full});
  }
  for (const ShardedEntry::Slice& slice : full->slices) {
    const ShardedEntry* e = Find(EncodeTensorNameSlice(
        key, int(full->shape.size()), slice.start, slice.length));
    if (e == nullptr || e->size != slice.length * *row_floats * 4) {
      return DataLossError(StrCat(ShardedIndexPath(prefix_), ": entry \"", key,
                                  "\" lists rows [", slice.start, ", ",
                                  slice.start + slice.length,
                                  ") that it does not hold"));
    }
    out.push_back({slice, e});
  }
  if (full->slices.empty() && full->size != full->shape[0] * *row_floats * 4) {
    return DataLossError(StrCat(ShardedIndexPath(prefix_), ": entry \"", key,
                                "\" has a size not its shape's"));
  }
  return out;
}

StatusOr<kernels::Tensor> ShardedCheckpointReader::ReadFloats(
    std::string_view key) const {
  int64_t row_floats = 1;
  DTF_ASSIGN_OR_RETURN(const std::vector<SliceAt> slices,
                       FloatSlices(key, &row_floats));
  kernels::Tensor t = kernels::Tensor::Zeros(Find(key)->shape);
  for (const SliceAt& s : slices) {
    char* base = reinterpret_cast<char*>(t.data() + s.slice.start * row_floats);
    DTF_RETURN_IF_ERROR(ReadRange(*s.entry, key, size_t(s.entry->size),
                                  [&](int64_t offset, std::string_view bytes) {
                                    std::memcpy(base + offset, bytes.data(),
                                                bytes.size());
                                    return OkStatus();
                                  }));
  }
  return t;
}

Status ShardedCheckpointReader::ReadRows(std::string_view key,
                                         std::span<const int64_t> rows,
                                         float* out) const {
  int64_t row_floats = 1;
  DTF_ASSIGN_OR_RETURN(const std::vector<SliceAt> slices,
                       FloatSlices(key, &row_floats));
  const size_t row_bytes = size_t(row_floats) * 4;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t row = rows[i];
    // The slice holding `row`: the last one starting at or before it.
    auto it = std::upper_bound(
        slices.begin(), slices.end(), row,
        [](int64_t r, const SliceAt& s) { return r < s.slice.start; });
    if (it == slices.begin() ||
        row >= (it - 1)->slice.start + (it - 1)->slice.length) {
      return OutOfRangeError(StrCat(ShardedIndexPath(prefix_), ": \"", key,
                                    "\" has no row ", row));
    }
    const SliceAt& s = *(it - 1);
    DTF_ASSIGN_OR_RETURN(const RandomAccessFile* file, Data(s.entry->shard));
    const uint64_t at =
        uint64_t(s.entry->offset) + uint64_t(row - s.slice.start) * row_bytes;
    size_t got = 0;
    char* dst = reinterpret_cast<char*>(out + int64_t(i) * row_floats);
    DTF_RETURN_IF_ERROR(file->Read(at, row_bytes, dst, &got));
    if (got != row_bytes) {
      return DataLossError(StrCat(file->name(), ": truncated: row ", row,
                                  " of \"", key, "\" ends at byte ",
                                  at + row_bytes));
    }
  }
  return OkStatus();
}

StatusOr<Bundle> ShardedCheckpointReader::ReadUnsliced() const {
  Bundle bundle;
  bundle.set_path(prefix_);
  for (const auto& [key, e] : entries_) {
    if (!e.slices.empty() || key.empty() || key[0] == '\0') continue;
    DTF_ASSIGN_OR_RETURN(std::string bytes, Read(key));
    switch (e.dtype) {
      case TfDtype::kFloat: {
        kernels::Tensor t = kernels::Tensor::Empty(e.shape);
        if (size_t(t.size()) * 4 != bytes.size()) {
          return DataLossError(StrCat(ShardedIndexPath(prefix_), ": entry \"",
                                      key, "\" has a size not its shape's"));
        }
        std::memcpy(t.data(), bytes.data(), bytes.size());
        bundle.AddTensor(key, t);
        break;
      }
      case TfDtype::kInt64: {
        std::vector<int64_t> v(bytes.size() / 8);
        std::memcpy(v.data(), bytes.data(), v.size() * 8);
        bundle.AddInt64s(key, v);
        break;
      }
      case TfDtype::kUint8:
        bundle.AddString(key, bytes);
        break;
    }
  }
  return bundle;
}

}  // namespace dtf::runtime
