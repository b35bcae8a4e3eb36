// libFuzzer target for the gzip and zlib readers of TFRecord files
// (NewDecompressedSequentialFile). The first input byte picks the format
// (bit 0) and a read size of 1..64 bytes (bits 2-7); the rest is the
// compressed stream. The stream must decompress to the same bytes, or fail
// with the same Status, read in small pieces and in one large one; what
// decompresses must compress and decompress back to itself. Output past
// kMaxOutput bytes is not read (a small stream can expand a thousandfold).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "lib/base/file.h"
#include "lib/data/compression.h"

namespace {

constexpr size_t kMaxOutput = 4 << 20;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "decompress_fuzz: %s\n", what);
  std::abort();
}

struct Result {
  std::string bytes;
  dtf::Status status;
  bool complete = false;  // reached the end, not kMaxOutput
};

Result Decompress(std::string input, dtf::Compression c, size_t read_size) {
  Result r;
  auto file = dtf::NewDecompressedSequentialFile(
      dtf::NewStringSequentialFile(std::move(input), "fuzz.gz"), c);
  if (!file.ok()) {
    r.status = file.status();
    return r;
  }
  std::string scratch(read_size, '\0');
  while (r.bytes.size() < kMaxOutput) {
    size_t n = 0;
    r.status = (*file)->Read(read_size, scratch.data(), &n);
    if (!r.status.ok()) return r;
    Check(n <= read_size, "read more than asked");
    if (n == 0) {
      r.complete = true;
      return r;
    }
    r.bytes.append(scratch, 0, n);
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const dtf::Compression c =
      (data[0] & 1) != 0 ? dtf::Compression::kZlib : dtf::Compression::kGzip;
  const size_t small_read = 1 + (data[0] >> 2);
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Result small = Decompress(input, c, small_read);
  const Result large = Decompress(input, c, 1 << 16);
  if (!small.complete || !large.complete) {
    // Stopped at kMaxOutput or at an error: what came before must agree.
    const size_t n = std::min(small.bytes.size(), large.bytes.size());
    Check(small.bytes.compare(0, n, large.bytes, 0, n) == 0,
          "bytes before the stop depend on the read size");
    if (!small.status.ok() && !large.status.ok()) {
      Check(small.status == large.status, "error depends on the read size");
    }
    return 0;
  }
  Check(small.status.ok() && large.status.ok(), "complete yet failed");
  Check(small.bytes == large.bytes, "bytes depend on the read size");

  std::string again;
  auto writer = dtf::NewCompressedWritableFile(
      dtf::NewStringWritableFile(&again, "fuzz.out"), c);
  Check(writer.ok(), "cannot make a writer");
  Check((*writer)->Append(large.bytes).ok(), "compressing failed");
  Check((*writer)->Close().ok(), "closing the writer failed");
  const Result back = Decompress(again, c, 1 << 16);
  Check(back.status.ok() && back.complete && back.bytes == large.bytes,
        "round trip through the writer changed the bytes");
  return 0;
}
