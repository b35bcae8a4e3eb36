// The best evaluation of a run, kept in its best checkpoint
// (checkpoint-best.dtf) beside the model it scored, so that a resumed run
// goes on comparing against it and exports the best of the whole run, not
// of its own part.
#pragma once

#include <optional>

#include "lib/base/status.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

// Entries of the best evaluation: its step, split, examples, class balance
// and metrics ("name=value" lines, each value with 17 significant digits).
inline constexpr std::string_view kBestEvalEntry = "eval/best";

// Adds `report` to `bundle` (replacing any best evaluation it has).
void AddBestEval(const EvalReport& report, Bundle* bundle);

// The best evaluation `bundle` holds; nullopt for a bundle without one (a
// checkpoint of a release that did not keep it). DataLoss naming the
// bundle's file when the entry is malformed.
StatusOr<std::optional<EvalReport>> ReadBestEval(const Bundle& bundle);

}  // namespace dtf::runtime
