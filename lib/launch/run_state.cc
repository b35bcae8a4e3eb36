#include "lib/launch/run_state.h"

#include <array>
#include <utility>

namespace dtf::launch {
namespace {

constexpr std::array<std::pair<TaskState, std::string_view>, 7> kTaskStates{{
    {TaskState::kStarting, "starting"},
    {TaskState::kRunning, "running"},
    {TaskState::kExited, "exited"},
    {TaskState::kFailed, "failed"},
    {TaskState::kStopped, "stopped"},
    {TaskState::kLost, "lost"},
    {TaskState::kReserved, "reserved"},
}};

constexpr std::array<std::pair<RunState, std::string_view>, 5> kRunStates{{
    {RunState::kStarting, "starting"},
    {RunState::kRunning, "running"},
    {RunState::kSucceeded, "succeeded"},
    {RunState::kFailed, "failed"},
    {RunState::kStopped, "stopped"},
}};

template <typename State, size_t N>
std::string_view NameIn(
    const std::array<std::pair<State, std::string_view>, N>& table,
    State state) {
  for (const auto& [s, name] : table) {
    if (s == state) return name;
  }
  return "unknown";
}

template <typename State, size_t N>
std::optional<State> ParseIn(
    const std::array<std::pair<State, std::string_view>, N>& table,
    std::string_view name) {
  for (const auto& [s, n] : table) {
    if (n == name) return s;
  }
  return std::nullopt;
}

}  // namespace

std::string_view TaskStateName(TaskState state) {
  return NameIn(kTaskStates, state);
}

std::string_view RunStateName(RunState state) {
  return NameIn(kRunStates, state);
}

std::optional<TaskState> ParseTaskState(std::string_view name) {
  return ParseIn(kTaskStates, name);
}

std::optional<RunState> ParseRunState(std::string_view name) {
  return ParseIn(kRunStates, name);
}

bool IsFinal(TaskState state) {
  return state != TaskState::kStarting && state != TaskState::kRunning;
}

bool IsFinal(RunState state) {
  return state != RunState::kStarting && state != RunState::kRunning;
}

}  // namespace dtf::launch
