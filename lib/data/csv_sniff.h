// Which delimiter a CSV file uses, guessed from its first lines as Python's
// csv.Sniffer does: among , ; tab and |, the one that splits every line into
// the same number of fields, the most fields winning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/csv_reader.h"

namespace dtf {

// The delimiters SniffDelimiter chooses among, in the order ties go.
inline constexpr char kSniffedDelimiters[] = {',', ';', '\t', '|'};

// The delimiter of `text`, the first bytes of a CSV file (up to ~64 KiB;
// a last line cut short is ignored). ',' when no candidate splits the lines
// consistently.
char SniffDelimiterText(std::string_view text);

// The delimiter of the file at `path`: '\t' for a name ending in ".tsv",
// else SniffDelimiterText of its first 64 KiB. I/O errors name the path; a
// file that looks binary is InvalidArgument (CheckLooksLikeText).
StatusOr<char> SniffDelimiter(const std::string& path);

// How a delimiter is given on the command line and named in messages:
// "tab" for '\t', else the character in single quotes (";" is "';'").
std::string DelimiterFlag(char delimiter);

// The fields of the first record of `path` read with `options` (empty for
// an empty file). A field that is no valid feature name (CheckHeaderText)
// is InvalidArgument "path:line:col: ...".
StatusOr<std::vector<std::string>> ReadCsvHeader(const std::string& path,
                                                 const CsvOptions& options);

// InvalidArgument "path:1: the header is one column ... give --delimiter X"
// when `header` is a single field holding one of kSniffedDelimiters other
// than `delimiter`: the file was read with the wrong delimiter.
Status CheckHeaderSplit(const std::string& path,
                        const std::vector<std::string>& header, char delimiter);

}  // namespace dtf
