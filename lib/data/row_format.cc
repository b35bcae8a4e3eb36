#include "lib/data/row_format.h"

#include <cstring>

namespace dtf {
namespace {

template <typename T>
void PutRaw(const T* values, size_t n, std::string* out) {
  out->append(reinterpret_cast<const char*>(values), n * sizeof(T));
}

void PutCount(int64_t n, std::string* out) {
  const uint32_t v = static_cast<uint32_t>(n);
  PutRaw(&v, 1, out);
}

uint32_t TakeCount(const char** p) {
  uint32_t v;
  std::memcpy(&v, *p, sizeof v);
  *p += sizeof v;
  return v;
}

// Appends n values at *p to `*values` (or writes them at `at`).
template <typename T>
void TakeValues(const char** p, size_t n, std::vector<T>* values) {
  const size_t old = values->size();
  values->resize(old + n);
  std::memcpy(values->data() + old, *p, n * sizeof(T));
  *p += n * sizeof(T);
}

}  // namespace

void EncodeRow(const Batch& batch, int64_t r, std::string* out) {
  for (const Column& c : batch.columns) {
    const int64_t begin = c.row_begin(r);
    const int64_t n = c.row_end(r) - begin;
    if (c.uses_row_splits()) PutCount(n, out);
    switch (c.type) {
      case FeatureType::kInt64:
        PutRaw(c.int64s.data() + begin, n, out);
        break;
      case FeatureType::kFloat:
        PutRaw(c.floats.data() + begin, n, out);
        break;
      case FeatureType::kBytes:
        for (int64_t v = begin; v < begin + n; ++v) {
          const std::string_view value = c.bytes_value(v);
          PutCount(static_cast<int64_t>(value.size()), out);
          out->append(value);
        }
        break;
    }
  }
}

void AppendEncodedRow(std::string_view row, Batch* dst) {
  const char* p = row.data();
  const int64_t r = dst->rows;
  for (Column& c : dst->columns) {
    if (!c.uses_row_splits()) {
      // Fixed numeric: Reset sized the column for every row.
      const size_t size =
          c.type == FeatureType::kInt64 ? sizeof(int64_t) : sizeof(float);
      char* at = c.type == FeatureType::kInt64
                     ? reinterpret_cast<char*>(c.int64s.data() + r * c.length)
                     : reinterpret_cast<char*>(c.floats.data() + r * c.length);
      std::memcpy(at, p, c.length * size);
      p += c.length * size;
      continue;
    }
    const uint32_t n = TakeCount(&p);
    switch (c.type) {
      case FeatureType::kInt64:
        TakeValues(&p, n, &c.int64s);
        break;
      case FeatureType::kFloat:
        TakeValues(&p, n, &c.floats);
        break;
      case FeatureType::kBytes:
        for (uint32_t v = 0; v < n; ++v) {
          const uint32_t size = TakeCount(&p);
          c.bytes.append(p, size);
          p += size;
          c.bytes_offsets.push_back(static_cast<int64_t>(c.bytes.size()));
        }
        break;
    }
    c.row_splits.push_back(c.row_splits.back() + n);
  }
  ++dst->rows;
}

}  // namespace dtf
