// Whole-stream compression of TFRecord files, as TensorFlow defines it:
// compression_type "" (none), "GZIP" (gzip header + deflate) and "ZLIB"
// (zlib header + deflate). zlib errors are translated to Status here.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/file.h"
#include "lib/base/status.h"

namespace dtf {

enum class Compression { kNone, kGzip, kZlib };

// "none" | "gzip" | "zlib" (case-insensitive; TensorFlow's "", "GZIP" and
// "ZLIB" are accepted too).
StatusOr<Compression> ParseCompression(std::string_view name);
// "none", "gzip" or "zlib".
std::string_view CompressionName(Compression c);
// File-name suffix dtf gives shards: "", ".gz" or ".zz".
std::string_view CompressionSuffix(Compression c);
// Guesses from the first bytes of a file (12 suffice): a valid TFRecord
// header means none (a record length can look like a magic); then gzip magic
// 1f 8b, a valid zlib header (CMF/FLG check), else none.
Compression DetectCompression(std::string_view first_bytes);

// Wraps `file` so that appended bytes are compressed. `level` is zlib's 0-9,
// -1 for its default (6). Close() finishes the stream and closes `file`.
StatusOr<std::unique_ptr<WritableFile>> NewCompressedWritableFile(
    std::unique_ptr<WritableFile> file, Compression c, int level = -1);
// Wraps `file` so that reads return decompressed bytes. Concatenated gzip
// members read as one stream. A truncated or corrupt stream, or data after the
// end of a zlib stream, yields DataLoss naming the file and the byte.
StatusOr<std::unique_ptr<SequentialFile>> NewDecompressedSequentialFile(
    std::unique_ptr<SequentialFile> file, Compression c);

}  // namespace dtf
