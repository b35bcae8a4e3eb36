#include "lib/runtime/train/input_trace.h"

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace dtf::runtime {
namespace {

void WritePosition(std::ofstream& out, int64_t step, const InputPosition& p) {
  out << step << ' ' << p.epoch << ' ' << p.file << ' ' << p.record << ' '
      << p.epoch_record << ' ' << p.emitted;
}

// DTF_TEST_INPUT_TRACE's "<column>@<dir>"; "" when unset or malformed.
std::string_view TraceSpec() {
  const char* env = std::getenv("DTF_TEST_INPUT_TRACE");
  if (env == nullptr) return "";
  const std::string_view spec(env);
  const size_t at = spec.find('@');
  return at == std::string_view::npos || at == 0 ? "" : spec;
}

}  // namespace

std::string InputTrace::ColumnFromEnvironment() {
  const std::string_view spec = TraceSpec();
  return std::string(spec.substr(0, spec.find('@')));
}

std::vector<FeatureParseSpec> InputTrace::WithTracedColumn(
    std::vector<FeatureParseSpec> features) {
  const std::string column = ColumnFromEnvironment();
  if (column.empty()) return features;
  for (const FeatureParseSpec& f : features) {
    if (f.name == column) return features;
  }
  FeatureParseSpec traced = FixedLenFeature(column, FeatureType::kInt64);
  traced.default_int64 = {-1};
  features.push_back(std::move(traced));
  return features;
}

InputTrace InputTrace::FromEnvironment(std::string_view task) {
  InputTrace trace;
  const std::string_view spec = TraceSpec();
  if (spec.empty() || task.empty()) return trace;
  const size_t at = spec.find('@');
  std::string name(task);
  for (char& c : name) {
    if (c == ':') c = '-';
  }
  const std::filesystem::path path =
      std::filesystem::path(std::string(spec.substr(at + 1))) /
      (name + ".trace");
  auto out = std::make_unique<std::ofstream>(path, std::ios::app);
  if (!*out) return trace;
  trace.column_ = std::string(spec.substr(0, at));
  trace.out_ = std::move(out);
  return trace;
}

void InputTrace::Start(int64_t global_step, const InputPosition& at) {
  if (out_ == nullptr) return;
  *out_ << "start ";
  WritePosition(*out_, global_step, at);
  *out_ << std::endl;
}

void InputTrace::Step(int64_t global_step, int shard,
                      const InputPosition& after, const Batch& batch) {
  if (out_ == nullptr) return;
  if (shard < 0) {
    *out_ << "step ";
  } else {
    *out_ << "take " << shard << ' ';
  }
  WritePosition(*out_, global_step, after);
  const Column* column = batch.Find(column_);
  for (int64_t r = 0; column != nullptr && r < batch.rows; ++r) {
    if (!column->floats.empty()) {
      *out_ << ' ' << int64_t(column->float_row(r)[0]);
    } else if (!column->int64s.empty()) {
      *out_ << ' ' << column->int64_row(r)[0];
    }
  }
  *out_ << std::endl;
}

}  // namespace dtf::runtime
