// Test only: a trace of the records each worker's training steps read, so
// that a test can count every example a run saw across a restart
// (tests/runtime/train/input_trace_test.cc). DTF_TEST_INPUT_TRACE=
// "<column>@<dir>" asks for it (as DTF_TEST_FREEZE_AT asks for a frozen
// step): each worker appends to <dir>/<task>.trace ("worker-1.trace"),
// one line at the start of its loop and one a step, each flushed as it is
// written (a killed process keeps what it wrote):
//   start <global step> <epoch> <file> <record> <epoch_record> <emitted>
//   step <global step> <epoch> <file> <record> <epoch_record> <emitted> <id>...
//   take <shard> <global step> <epoch> ... <id>...
// ("take": a step on a batch of another worker's input shard that the
// chief handed on to this one; the position is that shard's).
// A step's line is written before its gradients leave: the global step
// they were computed at, the input position after its batch and the value
// of `column` (an int column of the job's records, parsed beside the
// model's features where the model does not use it) in each of its rows.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/data/batch.h"
#include "lib/data/input_position.h"

namespace dtf::runtime {

class InputTrace {
 public:
  // The trace of task `task` that the environment asks for; one that
  // writes nothing when it asks for none (or for an unwritable file).
  static InputTrace FromEnvironment(std::string_view task);
  // The column the environment's trace asks for; "" when it asks for none.
  static std::string ColumnFromEnvironment();
  // `features` with the traced column added, as an int64 (-1 where a record
  // lacks it), unless it is among them or no trace is asked for.
  static std::vector<FeatureParseSpec> WithTracedColumn(
      std::vector<FeatureParseSpec> features);

  void Start(int64_t global_step, const InputPosition& at);
  // `shard`: -1 for the worker's own input shard.
  void Step(int64_t global_step, int shard, const InputPosition& after,
            const Batch& batch);

 private:
  std::string column_;
  std::unique_ptr<std::ofstream> out_;
};

}  // namespace dtf::runtime
