#include "lib/launch/task_files.h"

#include "absl/strings/ascii.h"
#include "lib/base/file.h"

namespace dtf::launch {

std::optional<std::string> ReadReadyAddress(const std::string& ready_file) {
  StatusOr<std::string> text = ReadFileToString(ready_file);
  if (!text.ok()) return std::nullopt;
  std::string address(absl::StripAsciiWhitespace(*text));
  if (address.empty()) return std::nullopt;
  return address;
}

void PollTaskTails(const std::vector<std::unique_ptr<LineTail>>& tails,
                   BackendEvents& events, bool flush) {
  for (size_t i = 0; i < tails.size(); ++i) {
    const Stream stream = i % 2 == 0 ? Stream::kStdout : Stream::kStderr;
    tails[i]->Poll(
        [&](std::string_view line) { events.Output(i / 2, stream, line); },
        flush);
  }
}

}  // namespace dtf::launch
