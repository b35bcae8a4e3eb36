// String building over fmt, taking std::string_view as well as strings,
// characters and numbers (Debian's absl::StrCat does not take
// std::string_view).
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "fmt/format.h"

namespace dtf {

// Appends each argument, formatted as fmt's "{}" does, to `*out`.
template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  (fmt::format_to(std::back_inserter(*out), "{}", args), ...);
}

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  StrAppend(&out, args...);
  return out;
}

// `s` as one POSIX shell word: bare when it holds only characters no shell
// reads specially, otherwise single-quoted.
std::string ShellQuote(std::string_view s);

// `s` followed by spaces up to `width` characters (a table column).
std::string PadRight(std::string_view s, size_t width);

// `text` in double quotes with control characters and quotes escaped, cut
// after 100 bytes: the form user text takes in messages.
std::string QuoteForMessage(std::string_view text);

// The first `max_items` of `items`, each as QuoteForMessage writes it,
// joined by ", ", then ", ... and N more" when there are more: how a message
// lists user values (a header, a label map's keys) however many there are.
std::string ListForMessage(const std::vector<std::string>& items,
                           size_t max_items = 10);

// The shortest text that reads back as `d` ("0.1", "1e+300", "inf").
std::string FormatDouble(double d);

}  // namespace dtf

// Lets fmt (and so StrCat) format absl::string_view, e.g. Status::message().
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<std::string_view> {
  auto format(absl::string_view s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(
        std::string_view(s.data(), s.size()), ctx);
  }
};
