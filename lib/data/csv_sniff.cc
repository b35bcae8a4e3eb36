#include "lib/data/csv_sniff.h"

#include <algorithm>
#include <iterator>
#include <memory>

#include "absl/strings/str_cat.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/csv_text.h"

namespace dtf {
namespace {

constexpr size_t kSniffBytes = 64 << 10;
constexpr size_t kSniffLines = 100;

// Delimiters outside quotes on each line of `text` (a quoted field may span
// lines; its line breaks do not end a line here).
std::vector<std::vector<int>> CountPerLine(std::string_view text,
                                           bool drop_last) {
  std::vector<std::vector<int>> lines;
  std::vector<int> counts(std::size(kSniffedDelimiters), 0);
  bool quoted = false, any = false;
  for (char c : text) {
    if (c == '"') quoted = !quoted;
    if (quoted) {
      any = true;
      continue;
    }
    if (c == '\n') {
      if (any) lines.push_back(counts);
      if (lines.size() == kSniffLines) return lines;
      std::fill(counts.begin(), counts.end(), 0);
      any = false;
      continue;
    }
    if (c != '\r') any = true;
    for (size_t k = 0; k < std::size(kSniffedDelimiters); ++k) {
      if (c == kSniffedDelimiters[k]) ++counts[k];
    }
  }
  if (any && !drop_last && !quoted) lines.push_back(counts);
  return lines;
}

}  // namespace

char SniffDelimiterText(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const bool cut = text.size() >= kSniffBytes;
  const std::vector<std::vector<int>> lines = CountPerLine(text, cut);
  if (lines.empty()) return ',';
  int best = -1, best_count = 0;
  // First a delimiter every line has equally often; failing that, the one
  // most lines agree with the header on.
  for (size_t k = 0; k < std::size(kSniffedDelimiters); ++k) {
    const int n = lines[0][k];
    if (n == 0) continue;
    const bool same =
        std::all_of(lines.begin(), lines.end(),
                    [&](const std::vector<int>& l) { return l[k] == n; });
    if (same && n > best_count) {
      best = static_cast<int>(k);
      best_count = n;
    }
  }
  if (best >= 0) return kSniffedDelimiters[best];
  size_t best_agree = 0;
  for (size_t k = 0; k < std::size(kSniffedDelimiters); ++k) {
    const int n = lines[0][k];
    if (n == 0) continue;
    const size_t agree =
        std::count_if(lines.begin(), lines.end(),
                      [&](const std::vector<int>& l) { return l[k] == n; });
    if (agree > best_agree) {
      best = static_cast<int>(k);
      best_agree = agree;
    }
  }
  return best >= 0 ? kSniffedDelimiters[best] : ',';
}

StatusOr<char> SniffDelimiter(const std::string& path) {
  if (path.size() > 4 && path.ends_with(".tsv")) return '\t';
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  std::string text(kSniffBytes, '\0');
  size_t filled = 0;
  while (filled < text.size()) {
    size_t got = 0;
    DTF_RETURN_IF_ERROR(
        file->Read(text.size() - filled, text.data() + filled, &got));
    if (got == 0) break;
    filled += got;
  }
  text.resize(filled);
  std::string_view head = text;
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  DTF_RETURN_IF_ERROR(CheckLooksLikeText(path, head));
  return SniffDelimiterText(text);
}

StatusOr<std::vector<std::string>> ReadCsvHeader(const std::string& path,
                                                 const CsvOptions& options) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  CsvChunker chunker(std::move(file), options, 64 << 10);
  CsvChunk chunk;
  CsvRow row;
  std::vector<std::string> header;
  while (header.empty()) {
    DTF_ASSIGN_OR_RETURN(bool more, chunker.Next(&chunk));
    if (!more) break;
    CsvChunkParser parser(chunk, options);
    DTF_ASSIGN_OR_RETURN(bool got, parser.Next(&row));
    if (!got) continue;
    DTF_RETURN_IF_ERROR(CheckHeaderText(path, row, options));
    for (std::string_view f : row.fields) header.emplace_back(f);
  }
  return header;
}

std::string DelimiterFlag(char delimiter) {
  return delimiter == '\t' ? "tab"
                           : absl::StrCat("'", std::string(1, delimiter), "'");
}

Status CheckHeaderSplit(const std::string& path,
                        const std::vector<std::string>& header,
                        char delimiter) {
  if (header.size() != 1) return OkStatus();
  for (char d : kSniffedDelimiters) {
    if (d == delimiter || header[0].find(d) == std::string::npos) continue;
    auto shown = [](char c) {
      return c == '\t' ? std::string("a tab")
                       : absl::StrCat("'", std::string(1, c), "'");
    };
    return InvalidArgumentError(absl::StrCat(
        path, ":1: the header is one column, ", QuoteForMessage(header[0]),
        ", which holds ", shown(d), ": the fields are not separated by ",
        shown(delimiter), "; give --delimiter ", DelimiterFlag(d)));
  }
  return OkStatus();
}

}  // namespace dtf
