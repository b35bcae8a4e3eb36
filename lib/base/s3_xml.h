// The few fields dtf reads from S3's XML replies (errors, listings,
// multipart uploads): element text by tag name, entities decoded. Not a
// general XML parser: S3's replies are flat and never nest a tag in itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtf {

// The decoded text of the first <tag>...</tag> in `xml`, or "" if none.
std::string XmlText(std::string_view xml, std::string_view tag);
// The raw inner XML of every <tag>...</tag> in `xml`, in order.
std::vector<std::string_view> XmlElements(std::string_view xml,
                                          std::string_view tag);
// Escapes & < > " ' for an element's text.
std::string XmlEscape(std::string_view text);

}  // namespace dtf
