// Zip archives written with libzip directly, with whatever entry names a
// test asks for: what ZipWriter refuses to make (an entry "../x"), as a
// hostile or damaged archive would hold it.
#pragma once

#include <zip.h>

#include <string>
#include <utility>
#include <vector>

namespace dtf::pack::testing {

// Writes `entries` (name, bytes), in order, to a new archive at `path`;
// false when libzip fails.
inline bool WriteCraftedZip(
    const std::string& path,
    const std::vector<std::pair<std::string, std::string>>& entries) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (zip == nullptr) return false;
  for (const auto& [name, data] : entries) {
    zip_source_t* source =
        zip_source_buffer(zip, data.data(), data.size(), /*freep=*/0);
    if (source == nullptr ||
        zip_file_add(zip, name.c_str(), source, ZIP_FL_ENC_UTF_8) < 0) {
      if (source != nullptr) zip_source_free(source);
      zip_discard(zip);
      return false;
    }
  }
  return zip_close(zip) == 0;
}

}  // namespace dtf::pack::testing
