#include "lib/launch/batch/shards.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

bool ShardParseCount(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

std::vector<std::string_view> ShardIndexWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t begin = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > begin) words.push_back(line.substr(begin, i - begin));
  }
  return words;
}

// Reads one shard's rows in turn.
struct ShardCursor {
  const ShardOutput* shard;
  size_t pos = 0;
  int64_t taken = 0;
  bool csv = false;

  bool done() const { return pos >= shard->text.size(); }
  std::string_view Next() {
    const size_t end = ShardRowEnd(shard->text, pos, csv);
    std::string_view row(shard->text.data() + pos, end - pos);
    pos = end;
    ++taken;
    return row;
  }
};

Status ShardsDisagree(const ShardOutput& shard, std::string_view why) {
  return DataLossError(StrCat(shard.name, ": ", why));
}

constexpr std::string_view kShardFrameMagic = "dtf-shard";

}  // namespace

std::string ShardOutputPath(const std::string& output, int k, int w) {
  return StrCat(output, ".shard-", k, "-of-", w);
}

std::string ShardFetchedPath(const std::string& shard_output) {
  return StrCat(shard_output, ".fetched");
}

bool ShardWasFetched(const std::string& shard_output) {
  std::error_code ec;
  return std::filesystem::exists(ShardFetchedPath(shard_output), ec);
}

std::string ShardIndexPath(const std::string& shard_output) {
  return StrCat(shard_output, ".rows");
}

std::string ShardIndexToText(const ShardIndex& index) {
  std::string out = StrCat("rows ", index.rows, "\n");
  if (index.inputs >= 0) StrAppend(&out, "inputs ", index.inputs, "\n");
  for (const auto& [file, rows] : index.files) {
    StrAppend(&out, "file ", file, " ", rows, "\n");
  }
  return out;
}

StatusOr<ShardIndex> ShardIndexFromText(std::string_view text,
                                        std::string_view name) {
  ShardIndex index;
  bool has_rows = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::vector<std::string_view> w = ShardIndexWords(line);
    if (w.empty()) continue;
    int64_t a = 0, b = 0;
    if (w[0] == "rows" && w.size() == 2 && ShardParseCount(w[1], &a) &&
        !has_rows) {
      index.rows = a;
      has_rows = true;
    } else if (w[0] == "inputs" && w.size() == 2 && ShardParseCount(w[1], &a) &&
               index.inputs < 0) {
      index.inputs = a;
    } else if (w[0] == "file" && w.size() == 3 && ShardParseCount(w[1], &a) &&
               ShardParseCount(w[2], &b)) {
      index.files.emplace_back(a, b);
    } else {
      return DataLossError(StrCat(name, ":", line_no,
                                  ": not a shard index line: \"", line, "\""));
    }
  }
  if (!has_rows) {
    return DataLossError(
        StrCat(name, ": a shard index without its \"rows\" line"));
  }
  return index;
}

StatusOr<int64_t> ShardInputCount(const std::vector<ShardOutput>& shards) {
  int64_t count = -1;
  for (const ShardOutput& s : shards) {
    if (s.index.inputs < 0) {
      return ShardsDisagree(s,
                            "its index does not say how many input files "
                            "the shard saw");
    }
    if (count >= 0 && s.index.inputs != count) {
      return ShardsDisagree(
          s,
          StrCat("it saw ", s.index.inputs, " input files, ", shards[0].name,
                 " ", count, " (did the input change while the shards ran?)"));
    }
    count = s.index.inputs;
  }
  if (count < 0) return InvalidArgumentError("no shards to merge");
  return count;
}

std::string ShardFrame(std::string_view index_text, std::string_view output) {
  return StrCat(kShardFrameMagic, " ", index_text.size(), " ", output.size(),
                "\n", index_text, output);
}

StatusOr<ShardOutput> ShardFromFrame(std::string_view frame, std::string name) {
  const size_t eol = frame.find('\n');
  const std::vector<std::string_view> w =
      ShardIndexWords(frame.substr(0, eol == std::string_view::npos ? 0 : eol));
  int64_t index_bytes = 0, output_bytes = 0;
  if (eol == std::string_view::npos || w.size() != 3 ||
      w[0] != kShardFrameMagic || !ShardParseCount(w[1], &index_bytes) ||
      !ShardParseCount(w[2], &output_bytes)) {
    return DataLossError(StrCat(name, ": not a shard (it starts \"",
                                frame.substr(0, std::min<size_t>(eol, 60)),
                                "\")"));
  }
  const std::string_view body = frame.substr(eol + 1);
  const uint64_t want = uint64_t(index_bytes) + uint64_t(output_bytes);
  if (body.size() != want) {
    return DataLossError(StrCat(name, ": the shard is ", body.size(),
                                " bytes where its header says ", want,
                                " (cut short in transfer?)"));
  }
  ShardOutput shard;
  shard.name = std::move(name);
  DTF_ASSIGN_OR_RETURN(
      shard.index,
      ShardIndexFromText(body.substr(0, size_t(index_bytes)), shard.name));
  shard.text = std::string(body.substr(size_t(index_bytes)));
  return shard;
}

size_t ShardRowEnd(std::string_view text, size_t pos, bool csv) {
  bool quoted = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (csv && c == '"') quoted = !quoted;
    if (c == '\n' && !quoted) return i + 1;
  }
  return text.size();
}

StatusOr<std::string> MergeShardOutputs(const std::vector<ShardOutput>& shards,
                                        int64_t num_files, bool csv) {
  const int64_t w = static_cast<int64_t>(shards.size());
  if (w == 0) return InvalidArgumentError("no shards to merge");
  std::vector<ShardCursor> cursors;
  for (const ShardOutput& s : shards) {
    if (s.index.inputs >= 0 && s.index.inputs != num_files) {
      return ShardsDisagree(
          s, StrCat("it saw ", s.index.inputs,
                    " input files where the merge has ", num_files));
    }
    cursors.push_back({&s, 0, 0, csv});
  }
  std::string out;
  if (csv) {
    std::string_view header;
    for (int64_t k = 0; k < w; ++k) {
      ShardCursor& c = cursors[size_t(k)];
      if (c.done()) return ShardsDisagree(*c.shard, "no CSV header");
      const std::string_view h = c.Next();
      c.taken = 0;
      if (k == 0) header = h;
      if (h != header) {
        return ShardsDisagree(*c.shard, StrCat("its CSV header differs from ",
                                               shards[0].name, "'s"));
      }
    }
    out += header;
  }
  if (num_files >= w) {
    // Whole files: file f is shard f % W's, the shard's (f / W)-th.
    for (int64_t f = 0; f < num_files; ++f) {
      ShardCursor& c = cursors[size_t(f % w)];
      const ShardIndex& index = c.shard->index;
      const size_t nth = size_t(f / w);
      if (nth >= index.files.size() || index.files[nth].first != f) {
        return ShardsDisagree(*c.shard,
                              StrCat("its index does not list input file ", f,
                                     " where the sharding rule puts it"));
      }
      for (int64_t r = 0; r < index.files[nth].second; ++r) {
        if (c.done()) {
          return ShardsDisagree(
              *c.shard,
              StrCat("fewer rows than its index says (", c.taken, ")"));
        }
        out += c.Next();
      }
    }
  } else {
    // Records: row j is shard j % W's.
    for (int64_t j = 0;; ++j) {
      ShardCursor& c = cursors[size_t(j % w)];
      if (c.done()) break;
      out += c.Next();
    }
  }
  for (const ShardCursor& c : cursors) {
    if (!c.done() || c.taken != c.shard->index.rows) {
      return ShardsDisagree(
          *c.shard,
          StrCat(c.done() ? "" : "more rows than merged; ", "its index says ",
                 c.shard->index.rows, " rows, the merge took ", c.taken));
    }
    if (num_files < w && !c.shard->index.files.empty()) {
      return ShardsDisagree(*c.shard,
                            "its index lists whole files, but there are "
                            "fewer files than shards");
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace dtf::launch
