// The device a task computes on, as job files, profiles and flags name it:
// "cpu", "cuda" (the first GPU the task can see) or "cuda:N" (GPU N of its
// host, as nvidia-smi numbers them).
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

struct DeviceName {
  bool cuda = false;
  // cuda:N: N; -1 for plain "cuda" and for "cpu".
  int ordinal = -1;

  bool operator==(const DeviceName&) const = default;
};

// InvalidArgument, quoting `text` and listing the accepted forms, for
// anything else.
StatusOr<DeviceName> ParseDeviceName(std::string_view text);
// "cpu", "cuda" or "cuda:N".
std::string DeviceNameString(const DeviceName& device);

}  // namespace dtf
