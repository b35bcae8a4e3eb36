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

std::vector<std::unique_ptr<LineTail>> OpenTaskTails(const Plan& plan) {
  std::vector<std::unique_ptr<LineTail>> tails;
  for (const TaskPlan& t : plan.tasks) {
    for (const std::string* file : {&t.stdout_file, &t.stderr_file}) {
      tails.push_back(std::make_unique<LineTail>(*file));
      if (plan.resume) tails.back()->SkipToEnd();
    }
  }
  return tails;
}

}  // namespace dtf::launch
