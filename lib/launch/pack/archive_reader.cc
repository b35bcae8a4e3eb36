#include "lib/launch/pack/archive_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "lib/base/strings.h"
#include "lib/launch/pack/entry_name.h"
#include "lib/launch/pack/zip_error.h"

namespace dtf::pack {

StatusOr<std::unique_ptr<ArchiveReader>> ArchiveReader::Open(
    const std::string& path) {
  // Opened here first so that file-system errors keep their errno.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path);
  int error = 0;
  zip_t* za = zip_fdopen(fd, ZIP_CHECKCONS, &error);
  if (za == nullptr) {
    ::close(fd);
    return ZipOpenErrorToStatus(error, path);
  }
  std::unique_ptr<ArchiveReader> reader(new ArchiveReader(path, za));
  const zip_int64_t n = zip_get_num_entries(za, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, index, 0, &st) != 0) {
      return ZipArchiveError(za, StrCat(path, ": entry ", i));
    }
    Entry e;
    e.name = st.name != nullptr ? st.name : "";
    e.size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    zip_uint8_t opsys = 0;
    zip_uint32_t attributes = 0;
    if (zip_file_get_external_attributes(za, index, 0, &opsys, &attributes) !=
        0) {
      return ZipArchiveError(za, StrCat(path, ": ", e.name));
    }
    if (opsys == ZIP_OPSYS_UNIX) {
      const uint32_t unix_mode = attributes >> 16;
      e.mode = unix_mode & 07777;
      if ((unix_mode & S_IFMT) != 0 && !S_ISREG(unix_mode)) e.regular = false;
    }
    if (!e.name.empty() && e.name.back() == '/') e.regular = false;
    reader->entries_.push_back(std::move(e));
  }
  return reader;
}

ArchiveReader::~ArchiveReader() { zip_discard(archive_); }

Status ArchiveReader::CheckEntryNames() const {
  for (const Entry& e : entries_) {
    if (Status s = CheckEntryName(e.name); !s.ok()) {
      return DataLossError(StrCat(path_, ": ", e.name, ": ", Message(s)));
    }
  }
  return OkStatus();
}

Status ArchiveReader::Read(
    size_t index, const std::function<Status(std::string_view)>& sink) const {
  const std::string what = StrCat(path_, ": ", entries_[index].name);
  zip_file_t* f = zip_fopen_index(archive_, index, 0);
  if (f == nullptr) return ZipArchiveError(archive_, what);
  std::vector<char> buffer(1 << 20);
  Status status;
  for (;;) {
    const zip_int64_t n = zip_fread(f, buffer.data(), buffer.size());
    if (n < 0) {
      status = ZipErrorToStatus(zip_file_get_error(f), what);
      break;
    }
    if (n == 0) break;
    status = sink(std::string_view(buffer.data(), static_cast<size_t>(n)));
    if (!status.ok()) break;
  }
  zip_fclose(f);
  return status;
}

StatusOr<std::string> ArchiveReader::ReadAll(size_t index,
                                             uint64_t limit) const {
  if (entries_[index].size > limit) {
    return DataLossError(StrCat(path_, ": ", entries_[index].name, ": ",
                                entries_[index].size, " bytes, over ", limit));
  }
  std::string out;
  DTF_RETURN_IF_ERROR(Read(index, [&](std::string_view chunk) {
    if (out.size() + chunk.size() > limit) {
      return DataLossError(StrCat(path_, ": ", entries_[index].name,
                                  ": longer than ", limit, " bytes"));
    }
    out.append(chunk);
    return OkStatus();
  }));
  return out;
}

}  // namespace dtf::pack
