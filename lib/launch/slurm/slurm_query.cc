#include "lib/launch/slurm/slurm_query.h"

#include <cctype>
#include <vector>

#include "lib/base/strings.h"

namespace dtf::launch::slurm {
namespace {

std::string_view QueryTrim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> QueryLines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = QueryTrim(text.substr(0, nl));
    if (!line.empty()) out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

bool StateWord(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(c >= 'A' && c <= 'Z') && c != '_') return false;
  }
  return true;
}

}  // namespace

StatusOr<std::string> ParseSbatchJobId(std::string_view output) {
  const std::vector<std::string_view> lines = QueryLines(output);
  // sbatch may warn on earlier lines; the id is the last.
  std::string_view id = lines.empty() ? std::string_view() : lines.back();
  id = id.substr(0, id.find(';'));
  bool digits = !id.empty();
  for (char c : id) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    return InvalidArgumentError(StrCat("sbatch --parsable printed ",
                                       QuoteForMessage(output),
                                       ", not a job id"));
  }
  return std::string(id);
}

StatusOr<std::optional<std::string>> ParseSqueueState(std::string_view output) {
  const std::vector<std::string_view> lines = QueryLines(output);
  if (lines.empty()) return std::optional<std::string>();
  if (!StateWord(lines.front())) {
    return InvalidArgumentError(StrCat(
        "squeue printed ", QuoteForMessage(output), ", not a job state"));
  }
  return std::optional<std::string>(std::string(lines.front()));
}

std::optional<std::string> ParseScontrolJobState(std::string_view output) {
  constexpr std::string_view kKey = "JobState=";
  size_t at = 0;
  while ((at = output.find(kKey, at)) != std::string_view::npos) {
    if (at == 0 || std::isspace(static_cast<unsigned char>(output[at - 1]))) {
      std::string_view rest = output.substr(at + kKey.size());
      size_t end = 0;
      while (end < rest.size() &&
             !std::isspace(static_cast<unsigned char>(rest[end]))) {
        ++end;
      }
      rest = rest.substr(0, end);
      if (StateWord(rest)) return std::string(rest);
      return std::nullopt;
    }
    at += kKey.size();
  }
  return std::nullopt;
}

std::optional<std::string> ParseSacctJobState(std::string_view output,
                                              std::string_view job_id) {
  for (std::string_view line : QueryLines(output)) {
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos || line.substr(0, bar) != job_id) {
      continue;
    }
    std::string_view state = line.substr(bar + 1);
    state = state.substr(0, state.find_first_of("| "));
    if (StateWord(state)) return std::string(state);
  }
  return std::nullopt;
}

std::optional<std::string> ParseStepId(std::string_view output,
                                       std::string_view name) {
  for (std::string_view line : QueryLines(output)) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    if (QueryTrim(line.substr(space + 1)) == name) {
      return std::string(line.substr(0, space));
    }
  }
  return std::nullopt;
}

StatusOr<std::optional<int64_t>> SlurmTimeSeconds(std::string_view text) {
  const std::string_view t = QueryTrim(text);
  if (t == "UNLIMITED" || t == "infinite" || t == "INFINITE") {
    return std::optional<int64_t>();
  }
  const auto bad = [&] {
    return InvalidArgumentError(
        StrCat(QuoteForMessage(t), " is not a Slurm time"));
  };
  int64_t days = -1;
  std::string_view rest = t;
  const size_t dash = t.find('-');
  if (dash != std::string_view::npos) {
    days = 0;
    for (char c : t.substr(0, dash)) {
      if (c < '0' || c > '9') return bad();
      days = days * 10 + (c - '0');
    }
    if (dash == 0) return bad();
    rest = t.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  int64_t value = 0;
  bool digits = false;
  for (size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || rest[i] == ':') {
      if (!digits) return bad();
      parts.push_back(value);
      value = 0;
      digits = false;
    } else if (rest[i] >= '0' && rest[i] <= '9') {
      value = value * 10 + (rest[i] - '0');
      digits = true;
      if (value > 100000000) return bad();
    } else {
      return bad();
    }
  }
  if (parts.empty() || parts.size() > 3) return bad();
  int64_t seconds = 0;
  if (days >= 0) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    seconds = days * 86400 + parts[0] * 3600;
    if (parts.size() > 1) seconds += parts[1] * 60;
    if (parts.size() > 2) seconds += parts[2];
  } else if (parts.size() == 1) {
    seconds = parts[0] * 60;  // MM
  } else if (parts.size() == 2) {
    seconds = parts[0] * 60 + parts[1];  // MM:SS
  } else {
    seconds = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  return std::optional<int64_t>(seconds);
}

StatusOr<std::vector<SinfoPartition>> ParseSinfoPartitions(
    std::string_view output) {
  std::vector<SinfoPartition> out;
  for (std::string_view line : QueryLines(output)) {
    std::vector<std::string_view> f;
    size_t at = 0;
    while (true) {
      const size_t bar = line.find('|', at);
      f.push_back(line.substr(at, bar - at));
      if (bar == std::string_view::npos) break;
      at = bar + 1;
    }
    int nodes = 0;
    bool ok = f.size() == 4 && !f[0].empty() && !f[2].empty();
    for (char c : ok ? f[2] : std::string_view()) {
      ok = ok && c >= '0' && c <= '9';
      nodes = nodes * 10 + (c - '0');
    }
    StatusOr<std::optional<int64_t>> limit =
        ok ? SlurmTimeSeconds(f[1])
           : StatusOr<std::optional<int64_t>>(InvalidArgumentError("bad"));
    if (!ok || !limit.ok()) {
      return InvalidArgumentError(StrCat("sinfo printed ",
                                         QuoteForMessage(line),
                                         ", not partition|limit|nodes|state"));
    }
    SinfoPartition p;
    p.name = std::string(f[0]);
    if (p.name.back() == '*') {
      p.is_default = true;
      p.name.pop_back();
    }
    p.max_seconds = *limit;
    p.nodes = nodes;
    p.up = f[3] == "up";
    bool merged = false;
    for (SinfoPartition& q : out) {
      if (q.name == p.name) {
        q.nodes += p.nodes;
        merged = true;
      }
    }
    if (!merged) out.push_back(std::move(p));
  }
  return out;
}

bool SlurmStateFinal(std::string_view state) {
  for (std::string_view s :
       {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
        "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}) {
    if (state == s) return true;
  }
  return false;
}

}  // namespace dtf::launch::slurm
