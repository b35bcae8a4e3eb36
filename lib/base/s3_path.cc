#include "lib/base/s3_path.h"

#include "absl/strings/str_cat.h"

namespace dtf {

bool IsS3Path(std::string_view path) { return path.starts_with(kS3Scheme); }

StatusOr<S3Path> ParseS3Path(std::string_view path) {
  if (!IsS3Path(path)) {
    return InvalidArgumentError(
        absl::StrCat(ToAbsl(path), ": not an s3:// path (s3://bucket/key)"));
  }
  std::string_view rest = path.substr(std::string_view(kS3Scheme).size());
  const size_t slash = rest.find('/');
  S3Path out;
  out.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    out.key = std::string(rest.substr(slash + 1));
  }
  bool valid = out.bucket.size() >= 3 && out.bucket.size() <= 63;
  for (char c : out.bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.' || c == '_')) {
      valid = false;
    }
  }
  if (!valid) {
    return InvalidArgumentError(absl::StrCat(
        ToAbsl(path), ": bucket name \"", out.bucket,
        "\" is not valid (3 to 63 lowercase letters, digits, '-' or '.')"));
  }
  return out;
}

std::string S3PathString(const S3Path& path) {
  return absl::StrCat(kS3Scheme, path.bucket, "/", path.key);
}

std::string S3UrlEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace dtf
