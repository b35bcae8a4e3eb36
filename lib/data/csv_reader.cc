#include "lib/data/csv_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_format.h"
#include "lib/base/storage.h"
#include "lib/data/csv_text.h"

namespace dtf {
namespace {

constexpr char kBom[] = "\xEF\xBB\xBF";

Status CheckOptions(const CsvOptions& options) {
  auto is_line_break = [](char c) { return c == '\n' || c == '\r'; };
  if (is_line_break(options.delimiter)) {
    return InvalidArgumentError("CSV delimiter cannot be a line break");
  }
  if (is_line_break(options.quote)) {
    return InvalidArgumentError("CSV quote cannot be a line break");
  }
  if (options.delimiter == options.quote) {
    return InvalidArgumentError(absl::StrFormat(
        "CSV delimiter and quote are the same character '%c'", options.quote));
  }
  return OkStatus();
}

inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }

inline const char* Find(const char* p, const char* end, char c) {
  return static_cast<const char*>(std::memchr(p, c, end - p));
}

// Calls f(p) for each p in [begin, end) where *p == delimiter, in order;
// returns false, having stopped early, when [begin, end) holds `quote`.
template <typename F>
inline bool ForEachDelimiter(const char* begin, const char* end, char delimiter,
                             char quote, F&& f) {
  const char* p = begin;
#if defined(__SSE2__)
  const __m128i d = _mm_set1_epi8(delimiter);
  const __m128i q = _mm_set1_epi8(quote);
  for (; end - p >= 16; p += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(block, q)) != 0) return false;
    unsigned mask = _mm_movemask_epi8(_mm_cmpeq_epi8(block, d));
    for (; mask != 0; mask &= mask - 1) f(p + __builtin_ctz(mask));
  }
  for (; p < end; ++p) {
    if (*p == quote) return false;
    if (*p == delimiter) f(p);
  }
#else
  if (Find(begin, end, quote) != nullptr) return false;
  while ((p = Find(p, end, delimiter)) != nullptr) f(p++);
#endif
  return true;
}

int64_t CountNewlines(const char* p, const char* end) {
  int64_t count = 0;
  while ((p = Find(p, end, '\n')) != nullptr) {
    ++count;
    ++p;
  }
  return count;
}

// A record of `len` bytes starting at `p` (without its '\n') is blank when it
// is empty or a lone '\r'; CsvChunkParser skips exactly these.
inline bool IsBlankRecord(const char* p, size_t len) {
  return len == 0 || (len == 1 && *p == '\r');
}

// Where the chunker's scan of one buffer stands. The buffer always starts at
// a record boundary, outside quotes.
struct ScanState {
  size_t pos = 0;  // next byte to scan
  bool in_quote = false;
  size_t quote_open = 0;    // the opening quote while in_quote
  size_t record_start = 0;  // start of the record being scanned
  int64_t lines = 0;        // '\n' bytes in [0, pos)
  int64_t records = 0;      // non-blank records ended in [0, pos)
  size_t boundary = 0;      // end of the last complete record
  int64_t boundary_lines = 0;
  int64_t boundary_records = 0;
};

// Scans buf[s->pos, size): every quote character toggles the quote state
// (which is how RFC 4180 quoting, "" escapes included, reads), and each '\n'
// outside quotes ends a record. Malformed quoting is left for the parser,
// which reports it before the two could disagree.
void Scan(const char* buf, size_t size, char quote, ScanState* s) {
  const char* const end = buf + size;
  const char* next_quote = nullptr;  // unknown
  while (s->pos < size) {
    const char* p = buf + s->pos;
    if (s->in_quote) {
      const char* q = Find(p, end, quote);
      s->lines += CountNewlines(p, q != nullptr ? q : end);
      if (q == nullptr) {
        s->pos = size;
        return;
      }
      s->in_quote = false;
      s->pos = q - buf + 1;
      continue;
    }
    if (next_quote == nullptr || next_quote < p) {
      next_quote = Find(p, end, quote);
      if (next_quote == nullptr) next_quote = end;
    }
    const char* nl = Find(p, next_quote, '\n');
    if (nl != nullptr) {
      const size_t i = nl - buf;
      ++s->lines;
      if (!IsBlankRecord(buf + s->record_start, i - s->record_start)) {
        ++s->records;
      }
      s->pos = s->record_start = s->boundary = i + 1;
      s->boundary_lines = s->lines;
      s->boundary_records = s->records;
      continue;
    }
    if (next_quote == end) {
      s->pos = size;
      return;
    }
    s->in_quote = true;
    s->quote_open = next_quote - buf;
    s->pos = s->quote_open + 1;
  }
}

}  // namespace

CsvChunker::CsvChunker(std::unique_ptr<SequentialFile> file,
                       const CsvOptions& options, size_t target_chunk_bytes)
    : file_(std::move(file)),
      options_(options),
      target_(std::max<size_t>(target_chunk_bytes, 1)),
      status_(CheckOptions(options)) {}

CsvChunker::~CsvChunker() = default;

Status CsvChunker::ReadHead() {
  const size_t want = kTextSniffBytes + 3;
  head_.resize(want);
  size_t filled = 0;
  while (filled < want) {
    size_t got = 0;
    Status status = file_->Read(want - filled, head_.data() + filled, &got);
    if (!status.ok()) {
      head_.clear();
      return status;
    }
    if (got == 0) {
      head_eof_ = true;
      break;
    }
    filled += got;
  }
  head_.resize(filled);
  if (head_.compare(0, 3, kBom) == 0) {
    head_pos_ = 3;
    offset_ += 3;
  }
  return CheckLooksLikeText(file_->name(),
                            std::string_view(head_).substr(head_pos_));
}

Status CsvChunker::ReadMore() {
  if (first_read_) {
    first_read_ = false;
    DTF_RETURN_IF_ERROR(ReadHead());
  }
  const size_t want =
      carry_.size() < target_ ? target_ - carry_.size() : target_;
  if (head_pos_ < head_.size()) {
    const size_t take = std::min(want, head_.size() - head_pos_);
    carry_.append(head_, head_pos_, take);
    head_pos_ += take;
    if (head_pos_ == head_.size()) {
      std::string().swap(head_);
      head_pos_ = 0;
    }
    return OkStatus();
  }
  if (head_eof_) {
    eof_ = true;
    return OkStatus();
  }
  const size_t old = carry_.size();
  carry_.resize(old + want);
  size_t got = 0;
  Status status = file_->Read(want, carry_.data() + old, &got);
  carry_.resize(old + (status.ok() ? got : 0));
  if (!status.ok()) return status;
  if (got == 0) eof_ = true;
  return OkStatus();
}

void CsvChunker::Emit(size_t end, int64_t lines, int64_t records,
                      CsvChunk* chunk) {
  chunk->source = file_->name();
  chunk->first_line = line_;
  chunk->first_record = record_;
  chunk->records = records;
  // The chunk takes the buffer; the bytes after `end` move to the chunk's
  // old buffer, which becomes the new carry.
  chunk->data.swap(carry_);
  carry_.assign(chunk->data, end, std::string::npos);
  chunk->data.resize(end);
  line_ += lines;
  record_ += records;
  offset_ += end;
  chunk->end_offset = offset_;
}

Status CsvChunker::UnterminatedQuote(size_t quote_open) {
  // The parser reports the first malformed field, which may be a stray quote
  // before the one left open.
  CsvChunk rest;
  rest.data = std::move(carry_);
  rest.source = file_->name();
  rest.first_line = line_;
  CsvChunkParser parser(rest, options_);
  CsvRow row;
  for (;;) {
    StatusOr<bool> more = parser.Next(&row);
    if (!more.ok()) return more.status();
    if (!*more) break;
  }
  const char* data = rest.data.data();
  const char* open = data + quote_open;
  const int64_t line = line_ + CountNewlines(data, open);
  const char* line_begin = open;
  while (line_begin > data && line_begin[-1] != '\n') --line_begin;
  return InvalidArgumentError(
      absl::StrFormat("%s:%d:%d: unterminated quoted field (opened here)",
                      rest.source, line, open - line_begin + 1));
}

StatusOr<bool> CsvChunker::Next(CsvChunk* chunk) {
  if (!status_.ok()) return status_;
  ScanState scan;
  for (;;) {
    if (!first_read_) {
      Scan(carry_.data(), carry_.size(), options_.quote, &scan);
    }
    if (eof_) {
      if (carry_.empty()) return false;
      if (scan.in_quote) {
        status_ = UnterminatedQuote(scan.quote_open);
        return status_;
      }
      const size_t size = carry_.size();
      const int64_t last = IsBlankRecord(carry_.data() + scan.record_start,
                                         size - scan.record_start)
                               ? 0
                               : 1;
      Emit(size, scan.lines, scan.records + last, chunk);
      return true;
    }
    if (scan.boundary > 0 && carry_.size() >= target_) {
      Emit(scan.boundary, scan.boundary_lines, scan.boundary_records, chunk);
      return true;
    }
    status_ = ReadMore();
    if (!status_.ok()) return status_;
  }
}

CsvChunkParser::CsvChunkParser(const CsvChunk& chunk, const CsvOptions& options)
    : chunk_(chunk),
      options_(options),
      options_status_(CheckOptions(options)),
      line_(chunk.first_line) {}

int32_t CsvChunkParser::Column(size_t pos) const {
  const size_t column = pos - line_start_ + 1;
  return static_cast<int32_t>(
      std::min<size_t>(column, std::numeric_limits<int32_t>::max()));
}

Status CsvChunkParser::ErrorAt(int64_t line, int32_t column,
                               std::string_view what) const {
  return InvalidArgumentError(
      absl::StrFormat("%s:%d:%d: %s", chunk_.source, line, column, what));
}

bool CsvChunkParser::SplitLine(const char* begin, const char* end,
                               CsvRow* row) const {
  const char* const line_begin = chunk_.data.data() + line_start_;
  const bool trim = options_.trim_spaces;
  // [field, field_end) holds no delimiter, so trimming never eats one.
  auto add = [&](const char* field, const char* field_end) {
    if (trim) {
      while (field < field_end && IsSpace(*field)) ++field;
      while (field_end > field && IsSpace(field_end[-1])) --field_end;
    }
    row->fields.emplace_back(field, field_end - field);
    row->columns.push_back(static_cast<int32_t>(
        std::min<ptrdiff_t>(field - line_begin + 1, INT32_MAX)));
  };
  const char* field = begin;
  const bool quote_free = ForEachDelimiter(begin, end, options_.delimiter,
                                           options_.quote, [&](const char* d) {
                                             add(field, d);
                                             field = d + 1;
                                           });
  if (!quote_free) return false;
  add(field, end);
  row->quoted.assign(row->fields.size(), false);
  return true;
}

Status CsvChunkParser::ParseQuotedRecord(CsvRow* row) {
  const char* const data = chunk_.data.data();
  const size_t n = chunk_.data.size();
  const char* const end = data + n;
  const char delimiter = options_.delimiter;
  const char quote = options_.quote;
  const bool trim = options_.trim_spaces;
  auto is_trimmed = [&](char c) {
    return trim && IsSpace(c) && c != delimiter;
  };
  stored_.clear();
  size_t p = pos_;
  for (;;) {
    while (p < n && is_trimmed(data[p])) ++p;
    const int32_t column = Column(p);
    if (line_ != row->line && row->field_lines.empty()) {
      row->field_lines.assign(row->fields.size(), row->line);
    }
    if (!row->field_lines.empty()) row->field_lines.push_back(line_);
    if (p < n && data[p] == quote) {
      const int64_t open_line = line_;
      size_t segment = ++p;  // start of bytes not yet copied to storage
      bool stored = false;
      const size_t offset = row->storage.size();
      for (;;) {
        const char* q = Find(data + p, end, quote);
        const char* stop = q != nullptr ? q : end;
        // Line breaks inside quotes are data, kept byte for byte (a CR LF
        // stays CR LF); they only advance the line count.
        for (const char* nl; (nl = Find(data + p, stop, '\n')) != nullptr;) {
          ++line_;
          p = line_start_ = nl - data + 1;
        }
        if (q == nullptr) {
          return ErrorAt(open_line, column,
                         "unterminated quoted field (opened here)");
        }
        const size_t qp = q - data;
        if (qp + 1 < n && data[qp + 1] == quote) {  // "" is one quote
          row->storage.append(data + segment, qp + 1 - segment);
          segment = p = qp + 2;
          stored = true;
          continue;
        }
        if (stored) {
          row->storage.append(data + segment, qp - segment);
          stored_.push_back(
              {row->fields.size(), offset, row->storage.size() - offset});
          row->fields.emplace_back();
        } else {
          row->fields.emplace_back(data + segment, qp - segment);
        }
        row->columns.push_back(column);
        row->quoted.push_back(true);
        p = qp + 1;
        break;
      }
      while (p < n && is_trimmed(data[p])) ++p;
      if (p < n && data[p] == delimiter) {
        ++p;
        continue;
      }
      if (p == n || data[p] == '\n' ||
          (data[p] == '\r' && (p + 1 == n || data[p + 1] == '\n'))) {
        break;
      }
      return ErrorAt(line_, Column(p),
                     absl::StrFormat("unexpected character after closing "
                                     "quote (opened at column %d)",
                                     column));
    }
    const size_t field_begin = p;
    while (p < n && data[p] != delimiter && data[p] != '\n') {
      if (data[p] == quote) {
        return ErrorAt(line_, Column(p), "unexpected quote in unquoted field");
      }
      ++p;
    }
    size_t field_end = p;
    if (field_end > field_begin && data[field_end - 1] == '\r' &&
        (p == n || data[p] == '\n')) {
      --field_end;
    }
    while (field_end > field_begin && is_trimmed(data[field_end - 1])) {
      --field_end;
    }
    row->fields.emplace_back(data + field_begin, field_end - field_begin);
    row->columns.push_back(column);
    row->quoted.push_back(false);
    if (p < n && data[p] == delimiter) {
      ++p;
      continue;
    }
    break;
  }
  // p is at the end of the chunk, at '\n', or at a '\r' ending the line.
  if (p < n && data[p] == '\r') ++p;
  if (p < n) {
    ++p;
    ++line_;
    line_start_ = p;
  }
  pos_ = p;
  for (const StoredField& f : stored_) {
    row->fields[f.field] =
        std::string_view(row->storage.data() + f.offset, f.size);
  }
  return OkStatus();
}

StatusOr<bool> CsvChunkParser::Next(CsvRow* row) {
  if (!options_status_.ok()) return options_status_;
  const char* const data = chunk_.data.data();
  const size_t n = chunk_.data.size();
  while (pos_ < n) {  // blank lines
    const char c = data[pos_];
    if (c == '\n') {
      line_start_ = ++pos_;
      ++line_;
    } else if (c == '\r' && (pos_ + 1 == n || data[pos_ + 1] == '\n')) {
      ++pos_;
    } else {
      break;
    }
  }
  if (pos_ >= n) return false;
  row->fields.clear();
  row->columns.clear();
  row->quoted.clear();
  row->field_lines.clear();
  row->storage.clear();
  row->line = line_;
  const char* begin = data + pos_;
  const char* nl = Find(begin, data + n, '\n');
  const char* line_end = nl != nullptr ? nl : data + n;
  const char* content_end = line_end;
  if (content_end > begin && content_end[-1] == '\r') --content_end;
  if (!SplitLine(begin, content_end, row)) {
    row->fields.clear();
    row->columns.clear();
    DTF_RETURN_IF_ERROR(ParseQuotedRecord(row));
    return true;
  }
  if (nl != nullptr) {
    pos_ = line_start_ = nl - data + 1;
    ++line_;
  } else {
    pos_ = n;
  }
  return true;
}

StatusOr<std::vector<std::vector<std::string>>> ReadCsvFile(
    const std::string& path, const CsvOptions& options) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  CsvChunker chunker(std::move(file), options);
  std::vector<std::vector<std::string>> rows;
  CsvChunk chunk;
  CsvRow row;
  for (;;) {
    DTF_ASSIGN_OR_RETURN(const bool more_chunks, chunker.Next(&chunk));
    if (!more_chunks) return rows;
    CsvChunkParser parser(chunk, options);
    for (;;) {
      DTF_ASSIGN_OR_RETURN(const bool more_rows, parser.Next(&row));
      if (!more_rows) break;
      rows.emplace_back(row.fields.begin(), row.fields.end());
    }
  }
}

}  // namespace dtf
