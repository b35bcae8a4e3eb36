// Writing a loaded job's model definition back as job-file TOML
// (docs/job-file.md), e.g. to export a trained model as a self-contained
// model.toml that LoadJobFile reads back to an equal definition.
#pragma once

#include <string>

#include "lib/data/features.h"
#include "lib/data/job_file.h"
#include "lib/data/model_options.h"

namespace dtf {

// The [schema], [features] and [model] tables of `job` as job-file TOML (no
// [data], no [train]): LoadJobFile on the text gives back the same schema,
// features and model. Vocabulary files are written inline as vocabulary
// lists (so the text stands alone); paths never appear. Every key is written
// explicitly where the parser accepts it, so the text does not depend on the
// parser's defaults. TOML strings hold only UTF-8, so a vocabulary entry
// that is not valid UTF-8 (possible only from a vocabulary file, whose bytes
// are not checked) is written as is and the text then fails to load.
// REQUIRES: job.model is set.
std::string ModelDefinitionToToml(const JobFile& job);

// Just the [features] table: one [[features.<kind>]] table per feature, the
// kinds in FeatureKind order and each kind in list order (the order the
// parser resolves sources in).
std::string FeatureSpecToToml(const FeatureSpec& features);

// Just the [model] table. The deep-part keys (hidden, activation,
// batch_norm, dropout) are left out for a linear model, and classes for any
// loss but softmax_crossentropy, as the parser rejects them there.
std::string ModelSpecToToml(const ModelSpec& model);

}  // namespace dtf
