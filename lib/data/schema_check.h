// Internal to lib/data: the checks ValidateSchema (lib/data/schema.h) makes,
// with each problem split into the key that holds it and what is wrong, so
// that the job-file loader can place it in the file.
#pragma once

#include <optional>
#include <string>

#include "lib/data/schema.h"

namespace dtf {

// One problem ValidateSchema reports, split into the key that holds it
// ("schema.columns[3].default") and what is wrong with it.
struct SchemaProblem {
  std::string key;
  std::string message;
};

// The first problem in `schema`, in the order ValidateSchema checks; nullopt
// when the schema is valid.
std::optional<SchemaProblem> FindSchemaProblem(const Schema& schema);

}  // namespace dtf
