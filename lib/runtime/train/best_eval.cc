#include "lib/runtime/train/best_eval.h"

#include <charconv>
#include <limits>
#include <string>
#include <system_error>

#include "lib/base/decimal.h"
#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

// `text` as a whole double; nullopt when it is not one.
std::optional<double> ParseDouble(std::string_view text) {
  double v = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
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
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if (key == "split") {
      report.split = std::string(value);
      continue;
    }
    if (key == "step" || key == "examples") {
      int64_t* to = key == "step" ? &report.step : &report.metrics.examples;
      if (!ParseDecimal(value, kMax, to)) return bad(line);
      has_step = has_step || key == "step";
      continue;
    }
    const std::optional<double> number = ParseDouble(value);
    if (!number) return bad(line);
    if (key == "positive_rate") {
      report.metrics.positive_rate = *number;
    } else if (key.starts_with("metric.") && key.size() > 7) {
      report.metrics.values.emplace_back(std::string(key.substr(7)), *number);
    } else {
      return bad(line);
    }
  }
  if (!has_step) return bad(text);
  return std::optional<EvalReport>(std::move(report));
}

}  // namespace dtf::runtime
