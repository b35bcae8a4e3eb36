#include "lib/base/s3_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/base/s3_xml.h"

namespace dtf {
namespace {

std::once_flag curl_init_once;

struct Upload {
  std::string_view data;
  size_t offset = 0;
};

size_t ReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  const size_t n = std::min(size * count, upload->data.size() - upload->offset);
  std::memcpy(buffer, upload->data.data() + upload->offset, n);
  upload->offset += n;
  return n;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<S3Client::Response*>(user);
  std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    const std::string name =
        absl::AsciiStrToLower(std::string(line.substr(0, colon)));
    const std::string value(
        absl::StripAsciiWhitespace(ToAbsl(line.substr(colon + 1))));
    if (name == "etag") response->etag = value;
    if (name == "content-length") {
      uint64_t n = 0;
      if (absl::SimpleAtoi(value, &n)) response->content_length = n;
    }
  }
  return size * count;
}

bool TransientCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool TransientHttpCode(long code) {
  return code == 429 || code == 500 || code == 502 || code == 503 ||
         code == 504;
}

std::string Where(const S3Path& path) {
  return path.key.empty() ? absl::StrCat(kS3Scheme, path.bucket)
                          : S3PathString(path);
}

// S3's error reply as a Status naming the bucket and key.
Status HttpError(const S3Path& path, const std::string& method, long code,
                 const std::string& body) {
  const std::string server_code = XmlText(body, "Code");
  const std::string message = XmlText(body, "Message");
  std::string detail = absl::StrCat("HTTP ", code);
  if (!server_code.empty()) absl::StrAppend(&detail, " ", server_code);
  if (!message.empty()) absl::StrAppend(&detail, ": ", message);
  const std::string where = Where(path);
  if (code == 401 || code == 403) {
    return PermissionDeniedError(absl::StrCat(
        where, ": access denied to bucket \"", path.bucket, "\" (", detail,
        "); check the credentials "
        "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE)"));
  }
  if (server_code == "NoSuchBucket" ||
      (code == 404 && method == "HEAD" && path.key.empty())) {
    return NotFoundError(absl::StrCat(where, ": no such bucket \"", path.bucket,
                                      "\" (", detail, ")"));
  }
  if (code == 404) {
    return NotFoundError(absl::StrCat(where, ": no such key \"", path.key,
                                      "\" in bucket \"", path.bucket, "\" (",
                                      detail, ")"));
  }
  if (code == 416) {
    return OutOfRangeError(absl::StrCat(where, ": range not satisfiable"));
  }
  if (code >= 500) {
    return UnavailableError(absl::StrCat(where, ": server error (", detail,
                                         ") on bucket \"", path.bucket, "\""));
  }
  return FailedPreconditionError(absl::StrCat(
      where, ": ", method, " refused by the server (", detail, ")"));
}

}  // namespace

S3Client::S3Client(S3Options options) : options_(std::move(options)) {
  std::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_ALL); });
  sigv4_ = absl::StrCat("aws:amz:", options_.region, ":s3");
}

S3Client::~S3Client() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* S3Client::AcquireHandle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void S3Client::ReleaseHandle(void* handle) {
  curl_easy_reset(static_cast<CURL*>(handle));
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < 16) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

std::string S3Client::Url(const Request& request) const {
  std::string endpoint = options_.endpoint;
  if (endpoint.empty()) {
    endpoint = absl::StrCat("https://s3.", options_.region, ".amazonaws.com");
  }
  while (endpoint.ends_with('/')) endpoint.pop_back();
  std::string url;
  const std::string key = S3UrlEncode(request.path.key, /*keep_slash=*/true);
  // The bucket itself is "/bucket" (path-style) or "/" (virtual-hosted).
  const std::string tail = key.empty() ? "" : absl::StrCat("/", key);
  if (options_.path_style) {
    url = absl::StrCat(endpoint, "/", request.path.bucket, tail);
  } else {
    const size_t scheme = endpoint.find("://");
    const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
    url = absl::StrCat(endpoint.substr(0, host), request.path.bucket, ".",
                       endpoint.substr(host), tail.empty() ? "/" : tail);
  }
  auto query = request.query;
  std::sort(query.begin(), query.end());
  for (size_t i = 0; i < query.size(); ++i) {
    absl::StrAppend(&url, i == 0 ? "?" : "&",
                    S3UrlEncode(query[i].first, false), "=",
                    S3UrlEncode(query[i].second, false));
  }
  return url;
}

StatusOr<S3Client::Response> S3Client::CallOnce(const Request& request,
                                                bool* retry) {
  *retry = false;
  if (!options_.config_error.empty()) {
    return FailedPreconditionError(
        absl::StrCat(Where(request.path),
                     ": S3 is not configured: ", options_.config_error));
  }
  CURL* h = static_cast<CURL*>(AcquireHandle());
  if (h == nullptr) return InternalError("libcurl: cannot create a handle");
  const std::string url = Url(request);
  Response response;
  response.body.reserve(request.expected_bytes);
  Upload upload{request.body, 0};
  curl_slist* headers = nullptr;
  headers =
      curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!options_.session_token.empty()) {
    const std::string token =
        absl::StrCat("x-amz-security-token: ", options_.session_token);
    headers = curl_slist_append(headers, token.c_str());
  }
  for (const std::string& header : request.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (!options_.access_key_id.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, options_.access_key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, options_.secret_access_key.c_str());
  }
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(options_.stall_timeout_s));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &response);
  if (request.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(h, CURLOPT_READDATA, &upload);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.code);
  curl_slist_free_all(headers);
  ReleaseHandle(h);
  const std::string where = Where(request.path);
  if (rc != CURLE_OK) {
    *retry = TransientCurlError(rc);
    return UnavailableError(absl::StrCat(where, ": ", request.method, " ", url,
                                         " failed: ", curl_easy_strerror(rc)));
  }
  if (response.code >= 200 && response.code < 300) return response;
  *retry = TransientHttpCode(response.code);
  return HttpError(request.path, request.method, response.code, response.body);
}

StatusOr<S3Client::Response> S3Client::Call(const Request& request) {
  int backoff_ms = options_.initial_backoff_ms;
  std::mt19937 jitter(std::random_device{}());
  for (int attempt = 1;; ++attempt) {
    bool retry = false;
    StatusOr<Response> response = CallOnce(request, &retry);
    if (response.ok() || !retry || attempt >= options_.max_attempts) {
      if (!response.ok() && retry) {
        return Status(response.status().code(),
                      absl::StrCat(ToAbsl(Message(response.status())),
                                   " (after ", attempt, " attempts)"));
      }
      return response;
    }
    const int sleep_ms =
        backoff_ms / 2 +
        static_cast<int>(jitter() % static_cast<unsigned>(backoff_ms / 2 + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    backoff_ms = std::min(backoff_ms * 2, options_.max_backoff_ms);
  }
}

}  // namespace dtf
