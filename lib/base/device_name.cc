#include "lib/base/device_name.h"

#include <charconv>

#include "lib/base/strings.h"

namespace dtf {

StatusOr<DeviceName> ParseDeviceName(std::string_view text) {
  if (text == "cpu") return DeviceName{};
  if (text == "cuda") return DeviceName{true, -1};
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int ordinal = -1;
    const auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (ec == std::errc() && end == digits.data() + digits.size() &&
        !digits.empty() && ordinal >= 0 && ordinal < 1024) {
      return DeviceName{true, ordinal};
    }
  }
  return InvalidArgumentError(StrCat("\"", text,
                                     "\" is not a device; expected \"cpu\", "
                                     "\"cuda\" or \"cuda:N\" (N from 0)"));
}

std::string DeviceNameString(const DeviceName& device) {
  if (!device.cuda) return "cpu";
  if (device.ordinal < 0) return "cuda";
  return StrCat("cuda:", device.ordinal);
}

}  // namespace dtf
