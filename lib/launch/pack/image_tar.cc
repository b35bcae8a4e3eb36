#include "lib/launch/pack/image_tar.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "lib/base/strings.h"
#include "lib/launch/pack/entry_name.h"

namespace dtf::pack {
namespace {

constexpr size_t kTarBlock = 512;

// Writes `value` as `width - 1` octal digits and a NUL into `field`.
void PutOctal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i > 0 && value != 0; --i) {
    digits[i - 1] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

// Splits `path` into ustar's prefix and name fields; false when it cannot.
bool SplitUstarPath(const std::string& path, std::string* prefix,
                    std::string* name) {
  if (path.size() <= 100) {
    prefix->clear();
    *name = path;
    return true;
  }
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (slash <= 155 && path.size() - slash - 1 <= 100) {
      *prefix = path.substr(0, slash);
      *name = path.substr(slash + 1);
      return true;
    }
  }
  return false;
}

StatusOr<std::string> TarHeader(const TarEntry& e, const std::string& path) {
  std::string prefix, name;
  if (!SplitUstarPath(path, &prefix, &name)) {
    return InvalidArgumentError(
        StrCat(e.path, ": too long for a ustar tar header"));
  }
  if (e.target.size() > 100) {
    return InvalidArgumentError(
        StrCat(e.path, ": symbolic link target over 100 bytes"));
  }
  char h[kTarBlock] = {};
  std::memcpy(h, name.data(), name.size());
  PutOctal(h + 100, 8, e.mode & 07777);
  PutOctal(h + 108, 8, 0);  // uid
  PutOctal(h + 116, 8, 0);  // gid
  PutOctal(h + 124, 12,
           e.type == TarEntry::Type::kFile ? e.data.size() : 0);  // size
  PutOctal(h + 136, 12, 0);                                       // mtime
  std::memset(h + 148, ' ', 8);
  h[156] = e.type == TarEntry::Type::kFile        ? '0'
           : e.type == TarEntry::Type::kDirectory ? '5'
                                                  : '2';
  std::memcpy(h + 157, e.target.data(), e.target.size());
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  PutOctal(h + 329, 8, 0);  // devmajor
  PutOctal(h + 337, 8, 0);  // devminor
  std::memcpy(h + 345, prefix.data(), prefix.size());
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  PutOctal(h + 148, 7, sum);
  h[155] = ' ';
  return std::string(h, kTarBlock);
}

uint64_t ParseOctal(const char* field, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    const char c = field[i];
    if (c == ' ' && value == 0) continue;
    if (c < '0' || c > '7') break;
    value = value * 8 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

std::string FieldString(const char* field, size_t width) {
  return std::string(field, strnlen(field, width));
}

}  // namespace

StatusOr<std::string> WriteTar(std::vector<TarEntry> entries) {
  std::set<std::string> paths;
  for (const TarEntry& e : entries) {
    if (Status s = CheckEntryName(e.path); !s.ok()) {
      return InvalidArgumentError(StrCat(e.path, ": ", Message(s)));
    }
    if (!paths.insert(e.path).second) {
      return InvalidArgumentError(StrCat(e.path, ": two entries of one path"));
    }
  }
  std::vector<TarEntry> parents;
  for (const TarEntry& e : entries) {
    for (size_t slash = e.path.find('/'); slash != std::string::npos;
         slash = e.path.find('/', slash + 1)) {
      std::string dir = e.path.substr(0, slash);
      if (paths.insert(dir).second) {
        parents.push_back({dir, TarEntry::Type::kDirectory, 0755, "", ""});
      }
    }
  }
  for (TarEntry& p : parents) entries.push_back(std::move(p));
  std::sort(
      entries.begin(), entries.end(),
      [](const TarEntry& a, const TarEntry& b) { return a.path < b.path; });
  std::string tar;
  for (const TarEntry& e : entries) {
    const std::string path =
        e.type == TarEntry::Type::kDirectory ? StrCat(e.path, "/") : e.path;
    DTF_ASSIGN_OR_RETURN(const std::string header, TarHeader(e, path));
    tar += header;
    if (e.type == TarEntry::Type::kFile) {
      tar += e.data;
      tar.append((kTarBlock - e.data.size() % kTarBlock) % kTarBlock, '\0');
    }
  }
  tar.append(2 * kTarBlock, '\0');
  return tar;
}

StatusOr<std::vector<TarEntry>> ReadTar(std::string_view tar,
                                        std::string_view name) {
  std::vector<TarEntry> entries;
  size_t pos = 0;
  std::string long_name;
  while (true) {
    if (pos + kTarBlock > tar.size()) {
      return DataLossError(StrCat(name, ": tar archive cut short"));
    }
    const char* h = tar.data() + pos;
    if (std::all_of(h, h + kTarBlock, [](char c) { return c == '\0'; })) {
      break;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < kTarBlock; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    }
    if (sum != ParseOctal(h + 148, 8)) {
      return DataLossError(
          StrCat(name, ": bad tar header checksum at offset ", pos));
    }
    const uint64_t size = ParseOctal(h + 124, 12);
    const size_t data_at = pos + kTarBlock;
    if (size > tar.size() - data_at) {
      return DataLossError(StrCat(name, ": tar entry data cut short"));
    }
    const std::string_view data = tar.substr(data_at, size);
    pos = data_at + (size + kTarBlock - 1) / kTarBlock * kTarBlock;
    const char type = h[156];
    if (type == 'L') {  // GNU long name
      long_name = FieldString(data.data(), data.size());
      continue;
    }
    if (type == 'x' || type == 'g') continue;  // pax headers
    TarEntry e;
    std::string path = FieldString(h, 100);
    const std::string prefix = FieldString(h + 345, 155);
    if (std::memcmp(h + 257, "ustar", 5) == 0 && !prefix.empty()) {
      path = StrCat(prefix, "/", path);
    }
    if (!long_name.empty()) path = std::exchange(long_name, "");
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.starts_with("./")) path = path.substr(2);
    e.path = path;
    e.mode = static_cast<uint32_t>(ParseOctal(h + 100, 8));
    if (type == '5') {
      e.type = TarEntry::Type::kDirectory;
    } else if (type == '2') {
      e.type = TarEntry::Type::kSymlink;
      e.target = FieldString(h + 157, 100);
    } else if (type == '0' || type == '\0') {
      e.data = std::string(data);
    } else {
      continue;  // hard links, devices, FIFOs: not in dtf images
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

StatusOr<std::string> Gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper with a zeroed header (no mtime, no
  // name).
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return InternalError("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return InternalError("gzip: deflate failed");
  out.resize(written);
  return out;
}

StatusOr<std::string> Gunzip(std::string_view data, std::string_view name) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) {
    return InternalError("gunzip: inflateInit2 failed");
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return DataLossError(StrCat(name, ": not gzip data, or cut short"));
  }
  return out;
}

}  // namespace dtf::pack
