// libzip's error codes turned into Status at the boundary. Internal to
// lib/launch/pack.
#pragma once

#include <zip.h>

#include <string_view>

#include "lib/base/status.h"

namespace dtf::pack {

// "<what>: <libzip's message>": system errors keep their errno's code
// (NotFound, PermissionDenied, ResourceExhausted, ...); a file that is not a
// zip archive, or is inconsistent or fails its CRC, is DataLoss; the rest is
// Internal.
Status ZipErrorToStatus(zip_error_t* error, std::string_view what);
// The same for a code from zip_open.
Status ZipOpenErrorToStatus(int code, std::string_view what);
// The archive's last error.
Status ZipArchiveError(zip_t* archive, std::string_view what);

}  // namespace dtf::pack
