// Internal to lib/data: pieces of schema.cc shared with the job-file loader
// and the schema inferrer.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

// "an int", "a float", "a str": the phrase after "expected".
std::string_view ValueTypeWithArticle(ValueType type);

// The type `value` holds.
ValueType TypeOfValue(const Value& value);

}  // namespace dtf
