// The largest sizes a job file may ask for. They keep a mistyped number
// from reaching an allocation: the model's total size is checked again,
// with its own limits, when its variables are laid out
// (lib/runtime/model/model.h). docs/job-file.md and man/dtf.toml.5 list them.
#pragma once

#include <cstdint>

namespace dtf {

// model.hidden: each layer's width, and how many layers.
inline constexpr int64_t kMaxLayerWidth = int64_t{1} << 16;  // 65,536
inline constexpr int64_t kMaxHiddenLayers = 64;
// model.classes.
inline constexpr int64_t kMaxClasses = int64_t{1} << 16;  // 65,536
// A feature's embedding dimension.
inline constexpr int64_t kMaxEmbedding = int64_t{1} << 12;  // 4,096
// A feature's buckets (hashed, crossed, text) and num_oov_buckets.
inline constexpr int64_t kMaxBuckets = int64_t{1} << 24;  // 16,777,216
// Entries of a categorical feature's vocabulary, and the bytes of its
// vocabulary_file.
inline constexpr int64_t kMaxVocabulary = int64_t{1} << 24;  // 16,777,216
inline constexpr int64_t kMaxVocabularyFileBytes = int64_t{1} << 30;  // 1 GiB
// [train] batch_size and shuffle_buffer (examples).
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 20;      // 1,048,576
inline constexpr int64_t kMaxShuffleBuffer = int64_t{1} << 24;  // 16,777,216
// [train] input_cache_memory_mb: 16 TiB.
inline constexpr int64_t kMaxInputCacheMemoryMb = int64_t{1} << 24;

}  // namespace dtf
