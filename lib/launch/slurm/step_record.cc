#include "lib/launch/slurm/step_record.h"

#include <array>
#include <vector>

#include "lib/base/strings.h"

namespace dtf::launch::slurm {
namespace {

constexpr std::array<std::string_view, 5> kRecordNames = {
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE"};

template <typename T>
std::string JoinWithCommas(const std::vector<T>& items) {
  std::string out;
  for (const T& item : items) StrAppend(&out, out.empty() ? "" : ",", item);
  return out;
}

}  // namespace

std::string StepRecordText(const SlurmStep& step) {
  return StrCat("SLURM_PROCID=", step.procid, "\nSLURM_NTASKS=", step.ntasks,
                "\nSLURM_LOCALID=", step.localid,
                "\nSLURM_STEP_NODELIST=", JoinWithCommas(step.nodes),
                "\nSLURM_STEP_TASKS_PER_NODE=",
                JoinWithCommas(step.tasks_per_node), "\n");
}

Status ApplyStepRecord(std::string_view text, std::string_view file,
                       Environment* env) {
  Environment values;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    const std::string_view name =
        eq == std::string_view::npos ? line : line.substr(0, eq);
    bool known = false;
    for (std::string_view n : kRecordNames) known = known || n == name;
    if (eq == std::string_view::npos || !known) {
      return InvalidArgumentError(StrCat(
          file, ":", line_no, ": expected one of SLURM_PROCID, ",
          "SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_NODELIST or ",
          "SLURM_STEP_TASKS_PER_NODE=VALUE, got ", QuoteForMessage(line)));
    }
    values[std::string(name)] = std::string(line.substr(eq + 1));
  }
  for (std::string_view n : kRecordNames) {
    if (values.find(n) == values.end()) {
      return InvalidArgumentError(StrCat(
          file, ": no ", n, " (not the record of a task of a dtf Slurm run)"));
    }
  }
  // ReadSlurmStep reads these before the job's variables (SLURM_NPROCS,
  // SLURM_JOB_NODELIST), which stay as they are.
  for (auto& [name, value] : values) (*env)[name] = value;
  return OkStatus();
}

}  // namespace dtf::launch::slurm
