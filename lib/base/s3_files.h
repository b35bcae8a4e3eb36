// Files on S3 behind the interfaces of lib/base/file.h.
#pragma once

#include <memory>

#include "lib/base/file.h"
#include "lib/base/s3_client.h"

namespace dtf {

// Reads the object front to back in ranged GETs of options().read_chunk,
// the next range always in flight while the caller consumes the current
// one. NotFound (naming bucket and key) when there is no such object.
StatusOr<std::unique_ptr<SequentialFile>> OpenS3SequentialFile(
    std::shared_ptr<S3Client> client, const S3Path& path);
// Each Read is one ranged GET.
StatusOr<std::unique_ptr<RandomAccessFile>> OpenS3RandomAccessFile(
    std::shared_ptr<S3Client> client, const S3Path& path);
// Buffers what is appended; the object appears when Close() succeeds, whole
// (one PUT, or a multipart upload of options().part_size parts completed
// by Close). A failure, or destruction without Close(), aborts the upload
// and leaves no object (an older one of that key stays as it was).
std::unique_ptr<WritableFile> NewS3WritableFile(
    std::shared_ptr<S3Client> client, const S3Path& path);

}  // namespace dtf
