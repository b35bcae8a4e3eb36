#include "lib/launch/pack/zip_error.h"

#include "lib/base/strings.h"

namespace dtf::pack {

Status ZipErrorToStatus(zip_error_t* error, std::string_view what) {
  const int code = zip_error_code_zip(error);
  const std::string message = StrCat(what, ": ", zip_error_strerror(error));
  if (zip_error_system_type(error) == ZIP_ET_SYS &&
      zip_error_code_system(error) != 0) {
    return Status(ErrnoToStatus(zip_error_code_system(error), what).code(),
                  ToAbsl(message));
  }
  switch (code) {
    case ZIP_ER_NOENT:
      return NotFoundError(message);
    case ZIP_ER_NOZIP:
    case ZIP_ER_INCONS:
    case ZIP_ER_CRC:
    case ZIP_ER_COMPNOTSUPP:
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_EOF:
      return DataLossError(message);
    case ZIP_ER_MEMORY:
      return ResourceExhaustedError(message);
    case ZIP_ER_EXISTS:
      return AlreadyExistsError(message);
    default:
      return InternalError(message);
  }
}

Status ZipOpenErrorToStatus(int code, std::string_view what) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  Status status = ZipErrorToStatus(&error, what);
  zip_error_fini(&error);
  return status;
}

Status ZipArchiveError(zip_t* archive, std::string_view what) {
  return ZipErrorToStatus(zip_get_error(archive), what);
}

}  // namespace dtf::pack
