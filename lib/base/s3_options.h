// How dtf reaches an S3-compatible object store: endpoint, region,
// credentials, addressing and the transfer settings. Filled by cmd/ from the
// AWS_* environment and ~/.aws/credentials (cmd/storage_env.h); the library
// reads no environment.
#pragma once

#include <cstddef>
#include <string>

namespace dtf {

struct S3Options {
  // "http://127.0.0.1:8333" or "https://minio.example:9000". Empty: AWS,
  // https://s3.<region>.amazonaws.com.
  std::string endpoint;
  // The region requests are signed for. Default "us-east-1".
  std::string region = "us-east-1";
  // Credentials; empty access_key_id sends unsigned (anonymous) requests.
  std::string access_key_id;
  std::string secret_access_key;
  // Sent as x-amz-security-token when not empty.
  std::string session_token;
  // Path-style URLs (endpoint/bucket/key) rather than virtual-hosted ones
  // (bucket.endpoint/key). Default true for a custom endpoint, false for
  // AWS (set by the caller).
  bool path_style = true;
  // Attempts per request on 5xx, 429, timeouts and dropped connections,
  // with backoff doubling from initial_backoff_ms up to max_backoff_ms.
  int max_attempts = 5;
  int initial_backoff_ms = 200;
  int max_backoff_ms = 5000;
  // Connect timeout, and a transfer slower than 1 KiB/s for this long is
  // a timeout.
  int connect_timeout_ms = 10000;
  int stall_timeout_s = 60;
  // Objects larger than this are written by multipart upload in parts of
  // this size (S3's minimum part is 5 MiB). Default 16 MiB.
  size_t part_size = size_t{16} << 20;
  // Sequential reads fetch ranges of this size and keep the next one in
  // flight (read-ahead). Default 8 MiB.
  size_t read_chunk = size_t{8} << 20;
  // When not empty, every request fails with this message (settings that
  // could not be read, reported when an s3:// path is used).
  std::string config_error;
};

}  // namespace dtf
