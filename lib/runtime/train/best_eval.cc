#include "lib/runtime/train/best_eval.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

// `text` as a whole double; nullopt when it is not one.
std::optional<double> ParseDouble(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

void AddBestEval(const EvalReport& report, Bundle* bundle) {
  const EvalMetrics& m = report.metrics;
  std::string text = fmt::format("step={}\nsplit={}\nexamples={}\n",
                                 report.step, report.split, m.examples);
  if (m.positive_rate) {
    text += fmt::format("positive_rate={:.17g}\n", *m.positive_rate);
  }
  for (const auto& [name, value] : m.values) {
    text += fmt::format("metric.{}={:.17g}\n", name, value);
  }
  bundle->AddString(std::string(kBestEvalEntry), text);
}

StatusOr<std::optional<EvalReport>> ReadBestEval(const Bundle& bundle) {
  if (bundle.Find(kBestEvalEntry) == nullptr) {
    return std::optional<EvalReport>();
  }
  DTF_ASSIGN_OR_RETURN(const std::string text,
                       bundle.GetString(kBestEvalEntry));
  const auto bad = [&](std::string_view line) {
    return DataLossError(StrCat(bundle.path(), ": entry ", kBestEvalEntry,
                                ": malformed line \"", line, "\""));
  };
  EvalReport report;
  bool has_step = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest =
        nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad(line);
    const std::string key(line.substr(0, eq));
    const std::string value(line.substr(eq + 1));
    if (key == "split") {
      report.split = value;
      continue;
    }
    const std::optional<double> number = ParseDouble(value);
    if (!number) return bad(line);
    if (key == "step") {
      report.step = static_cast<int64_t>(*number);
      has_step = true;
    } else if (key == "examples") {
      report.metrics.examples = static_cast<int64_t>(*number);
    } else if (key == "positive_rate") {
      report.metrics.positive_rate = *number;
    } else if (key.starts_with("metric.") && key.size() > 7) {
      report.metrics.values.emplace_back(key.substr(7), *number);
    } else {
      return bad(line);
    }
  }
  if (!has_step) return bad(text);
  return std::optional<EvalReport>(std::move(report));
}

}  // namespace dtf::runtime
