# What keeps a build from scratch short on a small machine (bench/build).
#
# Unity builds: each target's C++ files are compiled a few at a time as one
# translation unit, so the headers they share are parsed, and the inline
# and template code they share optimized, once per batch instead of once per
# file (half the compile time of lib/data). Off with -DDTF_UNITY_BUILD=OFF,
# which also shows a file that compiles only thanks to the includes of the
# files batched before it.
option(DTF_UNITY_BUILD "Compile each target's files in batches" ON)
set(DTF_UNITY_BATCH_SIZE 6 CACHE STRING "Files per unity batch")
if(DTF_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${DTF_UNITY_BATCH_SIZE})
endif()

# Precompiled headers: the standard library, abseil and fmt that nearly
# every file includes, plus per target the few heavy third-party headers its
# files share. Off with -DDTF_PRECOMPILED_HEADERS=OFF, which also shows a
# file that forgot an include.
option(DTF_PRECOMPILED_HEADERS "Precompile the widely included headers" ON)

set(DTF_PCH_COMMON
  <algorithm> <atomic> <chrono> <cstdint> <cstring> <filesystem>
  <functional> <map> <memory> <mutex> <optional> <span> <string>
  <string_view> <thread> <utility> <vector>
  <absl/status/status.h> <absl/status/statusor.h>
  <absl/strings/str_cat.h> <absl/strings/str_format.h> <fmt/format.h>)

# dtf_precompile(TARGET [HEADER...]): TARGET's C++ files see the common set
# and each HEADER (<third_party.h>, or [["proto/dtf.pb.h"]] for a generated
# one) precompiled.
function(dtf_precompile target)
  if(NOT DTF_PRECOMPILED_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${DTF_PCH_COMMON} ${ARGN})
endfunction()
