// An S3 client over libcurl: libcurl signs every request (AWS Signature V4,
// CURLOPT_AWS_SIGV4), this class builds the URLs, retries what is worth
// retrying and turns S3's error replies into a Status naming the bucket,
// the key and the server's error code. Thread-safe: each call takes a
// handle of its own from a small pool, which keeps connections alive.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/s3_options.h"
#include "lib/base/s3_path.h"
#include "lib/base/status.h"

namespace dtf {

struct S3Object {
  std::string key;
  uint64_t size = 0;
};

struct S3Listing {
  std::vector<S3Object> objects;
  // With a delimiter: the "directories" one level below the prefix.
  std::vector<std::string> common_prefixes;
};

class S3Client {
 public:
  explicit S3Client(S3Options options);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Options& options() const { return options_; }

  // Up to `n` bytes from `offset`; fewer only at the object's end, none
  // past it.
  StatusOr<std::string> GetRange(const S3Path& path, uint64_t offset, size_t n);
  // The whole object.
  StatusOr<std::string> Get(const S3Path& path);
  // The object's size; NotFound when there is none.
  StatusOr<uint64_t> Size(const S3Path& path);
  // One PUT: the object appears whole or not at all.
  Status Put(const S3Path& path, std::string_view data);
  // Multipart upload: the object appears when Complete succeeds.
  StatusOr<std::string> CreateMultipart(const S3Path& path);
  // Returns the part's ETag. Parts are numbered from 1.
  StatusOr<std::string> UploadPart(const S3Path& path,
                                   const std::string& upload_id, int part,
                                   std::string_view data);
  Status CompleteMultipart(const S3Path& path, const std::string& upload_id,
                           const std::vector<std::string>& etags);
  Status AbortMultipart(const S3Path& path, const std::string& upload_id);
  // Every object whose key starts with `prefix` (all pages); with a
  // `delimiter`, keys past it are folded into common_prefixes.
  StatusOr<S3Listing> List(const std::string& bucket, const std::string& prefix,
                           const std::string& delimiter = "");
  // Deleting an object that is not there succeeds (S3's rule).
  Status Delete(const S3Path& path);
  // A server-side copy (objects up to 5 GiB).
  Status Copy(const S3Path& from, const S3Path& to);
  Status CreateBucket(const std::string& bucket);

  struct Request;
  struct Response;

 private:
  // Sends `request`, retrying transient failures; a reply outside 2xx
  // becomes an error naming `request`'s bucket and key.
  StatusOr<Response> Call(const Request& request);
  StatusOr<Response> CallOnce(const Request& request, bool* retry);
  std::string Url(const Request& request) const;
  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  S3Options options_;
  std::string sigv4_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* handles, guarded by mu_
};

struct S3Client::Request {
  std::string method = "GET";
  S3Path path;
  // Query parameters, sent sorted by name as Signature V4 wants them.
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;
  // The reply's body size when known (a range), reserved at once so that
  // it is not copied as it grows.
  size_t expected_bytes = 0;
};

struct S3Client::Response {
  long code = 0;
  std::string body;
  std::string etag;
  uint64_t content_length = 0;
};

}  // namespace dtf
