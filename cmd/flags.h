// Checks for numeric flags whose messages read well: CLI11's own print
// "Value abc not in range 0.000000 to 1797...". With these a bad value
// reads "--steps: 'abc' is not an integer" or "--steps: must be at least 1"
// (CLI11 puts the flag's name in front).
#pragma once

#include <cstdint>
#include <limits>

#include "CLI/CLI.hpp"

namespace dtf::cli {

// An integer in [min, max]; a message names only the bound that matters.
CLI::Validator IntBetween(int64_t min, int64_t max);
// An integer of type T that is at least `min`.
template <typename T>
CLI::Validator IntAtLeast(T min) {
  return IntBetween(static_cast<int64_t>(min),
                    static_cast<int64_t>(std::numeric_limits<T>::max()));
}
// A finite number in [min, max].
CLI::Validator NumberBetween(double min, double max);
// A finite number that is at least `min`.
CLI::Validator NumberAtLeast(double min);

}  // namespace dtf::cli
