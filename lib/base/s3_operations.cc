// S3Client's operations: each one request (or a listing's pages) built on
// S3Client::Call.
#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/base/s3_client.h"
#include "lib/base/s3_xml.h"

namespace dtf {

StatusOr<std::string> S3Client::GetRange(const S3Path& path, uint64_t offset,
                                         size_t n) {
  if (n == 0) return std::string();
  Request request;
  request.path = path;
  request.headers.push_back(
      absl::StrCat("Range: bytes=", offset, "-", offset + n - 1));
  request.expected_bytes = n;
  StatusOr<Response> response = Call(request);
  if (!response.ok()) {
    // Past the end (416): no bytes.
    if (response.status().code() == absl::StatusCode::kOutOfRange) {
      return std::string();
    }
    return response.status();
  }
  std::string body = std::move(response->body);
  // A server that ignores Range sends the whole object (200).
  if (response->code == 200 && body.size() > n) {
    body = offset >= body.size() ? std::string() : body.substr(offset, n);
  }
  return body;
}

StatusOr<std::string> S3Client::Get(const S3Path& path) {
  Request request;
  request.path = path;
  DTF_ASSIGN_OR_RETURN(Response response, Call(request));
  return std::move(response.body);
}

StatusOr<uint64_t> S3Client::Size(const S3Path& path) {
  Request request;
  request.method = "HEAD";
  request.path = path;
  StatusOr<Response> response = Call(request);
  if (!response.ok() &&
      response.status().code() == absl::StatusCode::kNotFound &&
      !path.key.empty()) {
    // A HEAD reply has no body to tell a missing key from a missing bucket.
    Request bucket;
    bucket.method = "HEAD";
    bucket.path.bucket = path.bucket;
    StatusOr<Response> found = Call(bucket);
    if (!found.ok() && found.status().code() == absl::StatusCode::kNotFound) {
      return NotFoundError(absl::StrCat(
          S3PathString(path), ": no such bucket \"", path.bucket, "\""));
    }
  }
  if (!response.ok()) return response.status();
  return response->content_length;
}

Status S3Client::Put(const S3Path& path, std::string_view data) {
  Request request;
  request.method = "PUT";
  request.path = path;
  request.body = data;
  request.headers.push_back("Content-Type: application/octet-stream");
  return Call(request).status();
}

StatusOr<std::string> S3Client::CreateMultipart(const S3Path& path) {
  Request request;
  request.method = "POST";
  request.path = path;
  request.query = {{"uploads", ""}};
  request.headers.push_back("Content-Type: application/octet-stream");
  DTF_ASSIGN_OR_RETURN(Response response, Call(request));
  std::string id = XmlText(response.body, "UploadId");
  if (id.empty()) {
    return DataLossError(absl::StrCat(S3PathString(path),
                                      ": the server's reply to starting a "
                                      "multipart upload has no UploadId"));
  }
  return id;
}

StatusOr<std::string> S3Client::UploadPart(const S3Path& path,
                                           const std::string& upload_id,
                                           int part, std::string_view data) {
  Request request;
  request.method = "PUT";
  request.path = path;
  request.body = data;
  request.query = {{"partNumber", absl::StrCat(part)}, {"uploadId", upload_id}};
  DTF_ASSIGN_OR_RETURN(Response response, Call(request));
  return response.etag;
}

Status S3Client::CompleteMultipart(const S3Path& path,
                                   const std::string& upload_id,
                                   const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    absl::StrAppend(&xml, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>",
                    XmlEscape(etags[i]), "</ETag></Part>");
  }
  xml += "</CompleteMultipartUpload>";
  Request request;
  request.method = "POST";
  request.path = path;
  request.body = xml;
  request.query = {{"uploadId", upload_id}};
  request.headers.push_back("Content-Type: application/xml");
  DTF_ASSIGN_OR_RETURN(Response response, Call(request));
  // S3 may answer 200 and put the error in the body.
  if (!XmlText(response.body, "Code").empty() &&
      response.body.find("<Error>") != std::string::npos) {
    return UnavailableError(absl::StrCat(
        S3PathString(path), ": completing the multipart upload failed (",
        XmlText(response.body, "Code"), ": ", XmlText(response.body, "Message"),
        ")"));
  }
  return OkStatus();
}

Status S3Client::AbortMultipart(const S3Path& path,
                                const std::string& upload_id) {
  Request request;
  request.method = "DELETE";
  request.path = path;
  request.query = {{"uploadId", upload_id}};
  return Call(request).status();
}

StatusOr<S3Listing> S3Client::List(const std::string& bucket,
                                   const std::string& prefix,
                                   const std::string& delimiter) {
  S3Listing listing;
  std::string token;
  while (true) {
    Request request;
    request.path.bucket = bucket;
    request.query = {{"list-type", "2"}, {"prefix", prefix}};
    if (!delimiter.empty()) request.query.push_back({"delimiter", delimiter});
    if (!token.empty()) request.query.push_back({"continuation-token", token});
    DTF_ASSIGN_OR_RETURN(Response response, Call(request));
    for (std::string_view item : XmlElements(response.body, "Contents")) {
      S3Object object;
      object.key = XmlText(item, "Key");
      const std::string size = XmlText(item, "Size");
      if (!absl::SimpleAtoi(size, &object.size)) {
        return DataLossError(absl::StrCat(kS3Scheme, bucket, "/", object.key,
                                          ": the listing gives no size (\"",
                                          size, "\")"));
      }
      listing.objects.push_back(std::move(object));
    }
    for (std::string_view item : XmlElements(response.body, "CommonPrefixes")) {
      listing.common_prefixes.push_back(XmlText(item, "Prefix"));
    }
    token = XmlText(response.body, "NextContinuationToken");
    if (XmlText(response.body, "IsTruncated") != "true" || token.empty()) {
      break;
    }
  }
  std::sort(listing.objects.begin(), listing.objects.end(),
            [](const S3Object& a, const S3Object& b) { return a.key < b.key; });
  return listing;
}

Status S3Client::Delete(const S3Path& path) {
  Request request;
  request.method = "DELETE";
  request.path = path;
  return Call(request).status();
}

Status S3Client::Copy(const S3Path& from, const S3Path& to) {
  Request request;
  request.method = "PUT";
  request.path = to;
  request.headers.push_back(
      absl::StrCat("x-amz-copy-source: /", from.bucket, "/",
                   S3UrlEncode(from.key, /*keep_slash=*/true)));
  DTF_ASSIGN_OR_RETURN(Response response, Call(request));
  if (response.body.find("<Error>") != std::string::npos) {
    return UnavailableError(absl::StrCat(S3PathString(from), ": copying to ",
                                         S3PathString(to), " failed (",
                                         XmlText(response.body, "Code"), ")"));
  }
  return OkStatus();
}

Status S3Client::CreateBucket(const std::string& bucket) {
  Request request;
  request.method = "PUT";
  request.path.bucket = bucket;
  return Call(request).status();
}

}  // namespace dtf
