// The one rule for the names of entries in dtf's archives, shared by what
// writes them (ZipWriter, the manifest) and what writes them out again
// (UnpackArchive here, RemoteHost::Ship on a host): a name is a relative
// path inside the directory it is unpacked into, and cannot leave it.
#pragma once

#include <string_view>

#include "lib/base/status.h"

namespace dtf::pack {

// OK when `name` is relative and '/'-separated, with no empty, "." or ".."
// component, no trailing '/', and no '\\' or NUL. InvalidArgument saying
// what is wrong otherwise (the caller names the entry and the archive).
Status CheckEntryName(std::string_view name);

}  // namespace dtf::pack
