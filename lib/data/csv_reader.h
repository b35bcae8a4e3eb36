// CSV as real files hold it: RFC 4180 quoting ("" inside quotes is one ",
// line breaks inside quotes belong to the field, byte for byte: a CR LF there
// stays CR LF, as in Python's csv module), LF or CRLF line ends (a lone CR
// outside quotes is data), a UTF-8 byte-order mark, any one-byte delimiter,
// spaces around fields (UCI Adult's ", "), blank lines (empty or a lone CR)
// skipped. Apart from "" and optional trimming outside quotes, a field's
// bytes are the file's bytes. The dialect is specified in docs/job-file.md.
//
// Reading is split in two so it parallelises: CsvChunker cuts the byte stream
// into chunks that end on record boundaries (tracking quotes), counting lines
// and records as it goes; CsvChunkParser turns one chunk into rows, and may
// run on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/csv_row.h"

namespace dtf {

// A run of whole records from one input.
struct CsvChunk {
  std::string data;
  // Name of the input, for messages.
  std::string source;
  // 1-based physical line number of data[0].
  int64_t first_line = 1;
  // 0-based index (within the input, counting non-blank records, header
  // included) of the first record in this chunk.
  int64_t first_record = 0;
  // Records (non-blank) in `data`.
  int64_t records = 0;
  // Bytes of the input consumed up to the end of this chunk.
  uint64_t end_offset = 0;
};

class CsvChunker {
 public:
  // `target_chunk_bytes`: chunks are about this size (longer when a single
  // record is longer). Strips a leading UTF-8 BOM.
  CsvChunker(std::unique_ptr<SequentialFile> file, const CsvOptions& options,
             size_t target_chunk_bytes = 4 << 20);
  ~CsvChunker();
  // Fills `*chunk` with the next chunk; false at end of input. The last
  // record may lack a final newline. A quote still open at end of input is
  // InvalidArgument "source:line:col: unterminated quoted field (opened
  // here)", or the parser's error for a malformed field before it. An
  // input whose first bytes look binary is InvalidArgument "source: looks
  // like a binary file, not CSV (...)" (CheckLooksLikeText). Options
  // whose delimiter or quote is a line break, or that are equal, are
  // InvalidArgument. Errors are sticky.
  StatusOr<bool> Next(CsvChunk* chunk);

 private:
  // Reads the input's first bytes into head_ and checks that they look
  // like text (csv_text.h).
  Status ReadHead();
  // Appends up to one read's worth of input to carry_ (head_ first); sets
  // eof_.
  Status ReadMore();
  // Moves carry_[0, end) into `*chunk` and advances the counters.
  void Emit(size_t end, int64_t lines, int64_t records, CsvChunk* chunk);
  // The error for a quote still open at end of input; `quote_open` indexes
  // carry_.
  Status UnterminatedQuote(size_t quote_open);

  std::unique_ptr<SequentialFile> file_;
  CsvOptions options_;
  size_t target_;
  std::string carry_;  // bytes read past the last chunk boundary
  Status status_;      // sticky: the first error
  bool eof_ = false;
  bool first_read_ = true;
  // The input's first bytes (up to kTextSniffBytes after a byte-order
  // mark), read whole before anything else so that the binary-file check
  // sees the same bytes whatever the chunk size; handed out from head_pos_
  // on before the rest of the file. head_eof_: the file ended within them.
  std::string head_;
  size_t head_pos_ = 0;
  bool head_eof_ = false;
  int64_t line_ = 1;
  int64_t record_ = 0;
  uint64_t offset_ = 0;
};

// Parses the records of one chunk in order. Malformed quoting (a stray quote
// inside an unquoted field, characters after a closing quote, a quote left
// open at the end of the chunk) is InvalidArgument "source:line:col: ...".
// Not thread-safe; use one parser per chunk, on any thread. `chunk` must
// outlive the parser.
class CsvChunkParser {
 public:
  CsvChunkParser(const CsvChunk& chunk, const CsvOptions& options);
  // Parses the next non-blank record into `*row`; false at end of chunk.
  StatusOr<bool> Next(CsvRow* row);

 private:
  // A field unescaped into CsvRow::storage, turned into a view once the
  // record is complete (storage may reallocate while it grows).
  struct StoredField {
    size_t field;
    size_t offset;
    size_t size;
  };
  // Splits the bytes [begin, end) of one line into fields; false, with `row`
  // partly filled, when they hold a quote character.
  bool SplitLine(const char* begin, const char* end, CsvRow* row) const;
  // Parses the record at pos_, which contains a quote character.
  Status ParseQuotedRecord(CsvRow* row);
  int32_t Column(size_t pos) const;
  Status ErrorAt(int64_t line, int32_t column, std::string_view what) const;

  const CsvChunk& chunk_;
  CsvOptions options_;
  Status options_status_;
  size_t pos_ = 0;
  int64_t line_;
  size_t line_start_ = 0;  // offset in chunk_.data of the current line
  std::vector<StoredField> stored_;
};

// Convenience for small inputs and tests: every record of `path`.
StatusOr<std::vector<std::vector<std::string>>> ReadCsvFile(
    const std::string& path, const CsvOptions& options);

}  // namespace dtf
