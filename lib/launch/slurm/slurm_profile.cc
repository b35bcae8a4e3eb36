#include "lib/launch/slurm/slurm_profile.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"
#include "lib/launch/backend_table.h"

namespace dtf::launch::slurm {
namespace {

using toml_util::Reader;

// Digits only, at most 9 of them, into *out.
bool TimeField(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  std::from_chars(text.data(), text.data() + text.size(), *out);
  return true;
}

StatusOr<std::vector<std::string>> ReadArgs(const Reader& reader,
                                            const toml::node& node,
                                            std::string_view key) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return reader.Error(node, key,
                        StrCat("expected an array of strings, got ",
                               toml_util::Describe(node)));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string element = StrCat(key, "[", i, "]");
    DTF_ASSIGN_OR_RETURN(std::string arg,
                         ReadOneLine(reader, *array->get(i), element));
    if (!arg.starts_with("-")) {
      return reader.Error(*array->get(i), element,
                          StrCat("expected an option such as "
                                 "\"--qos=high\", got ",
                                 toml_util::Text(*array->get(i))));
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace

Status ValidateSlurmTimeLimit(std::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE") return OkStatus();
  const std::string usage =
      "expected minutes (\"30\"), \"MM:SS\", \"HH:MM:SS\", \"D-HH\", "
      "\"D-HH:MM\", \"D-HH:MM:SS\" or \"UNLIMITED\"";
  int64_t days = 0;
  std::string_view rest = text;
  const size_t dash = text.find('-');
  const bool has_days = dash != std::string_view::npos;
  if (has_days) {
    if (!TimeField(text.substr(0, dash), &days)) {
      return InvalidArgumentError(StrCat(QuoteForMessage(text), ": ", usage));
    }
    rest = text.substr(dash + 1);
  }
  std::vector<int64_t> fields;
  size_t pos = 0;
  while (true) {
    const size_t colon = rest.find(':', pos);
    const std::string_view field = rest.substr(
        pos,
        colon == std::string_view::npos ? std::string_view::npos : colon - pos);
    int64_t v = 0;
    if (!TimeField(field, &v)) {
      return InvalidArgumentError(StrCat(QuoteForMessage(text), ": ", usage));
    }
    fields.push_back(v);
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  if (fields.size() > 3) {
    return InvalidArgumentError(StrCat(QuoteForMessage(text), ": ", usage));
  }
  // Without days: M, M:S, H:M:S. With days: H, H:M, H:M:S.
  int64_t hours = 0, minutes = 0, seconds = 0;
  if (has_days) {
    hours = fields[0];
    if (fields.size() > 1) minutes = fields[1];
    if (fields.size() > 2) seconds = fields[2];
  } else if (fields.size() == 1) {
    minutes = fields[0];
  } else if (fields.size() == 2) {
    minutes = fields[0];
    seconds = fields[1];
  } else {
    hours = fields[0];
    minutes = fields[1];
    seconds = fields[2];
  }
  const bool bounded_minutes = has_days || fields.size() == 3;
  if (seconds > 59 || (bounded_minutes && minutes > 59) ||
      (has_days && hours > 23)) {
    return InvalidArgumentError(
        StrCat(QuoteForMessage(text),
               ": a field out of range (seconds and minutes "
               "under 60, hours under 24 after days)"));
  }
  if (days == 0 && hours == 0 && minutes == 0 && seconds == 0) {
    return InvalidArgumentError(
        StrCat(QuoteForMessage(text), ": must be more than zero"));
  }
  return OkStatus();
}

Status CheckSlurmProfileKeys(const Reader& reader,
                             const toml_util::Table& profile) {
  return reader.CheckKnownKeys(
      profile.table, "",
      {"backend", "ps", "workers", "threads", "env", "max_restarts", "device",
       "tls", "slurm", "s3", "min_workers", "max_workers"},
      [](std::string_view name) -> std::string {
        if (name == "base_port") {
          return "not for backend = \"slurm\" (set slurm.base_port)";
        }
        if (name == "gpus") {
          return "not for backend = \"slurm\" (set slurm.gpus_per_node)";
        }
        if (name == "host" || name == "hosts" || name == "hostfile" ||
            name == "work_dir" || name == "with_data" || name == "ssh") {
          return "not for backend = \"slurm\" (Slurm chooses the nodes; "
                 "slurm.run_dir is the shared directory)";
        }
        return "";
      });
}

StatusOr<SlurmProfile> ReadSlurmProfile(const Reader& reader,
                                        const toml_util::Table& profile,
                                        std::string_view profile_dir) {
  const std::initializer_list<std::string_view> kSlurmKeys = {
      "partition",      "account",       "time_limit", "nodes",
      "tasks_per_node", "gpus_per_node", "constraint", "sbatch_args",
      "srun_args",      "base_port",     "run_dir"};
  SlurmProfile p;
  DTF_ASSIGN_OR_RETURN(const toml::table* table,
                       BackendTable(reader, profile, "slurm", kSlurmKeys));
  if (table == nullptr) return p;
  for (const auto& [key, value_ptr] : toml_util::InFileOrder(*table)) {
    const std::string_view name = key->str();
    const std::string path = StrCat("slurm.", toml_util::KeyPart(name));
    const toml::node& value = *value_ptr;
    p.where[path] = WhereOf(reader, value);
    if (name == "nodes") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1, 100000));
      p.nodes = static_cast<int>(v);
    } else if (name == "tasks_per_node") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1, 4096));
      p.tasks_per_node = static_cast<int>(v);
    } else if (name == "gpus_per_node") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 0, 1024));
      p.gpus_per_node = static_cast<int>(v);
    } else if (name == "base_port") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1024, 65535));
      p.base_port = static_cast<int>(v);
    } else if (name == "sbatch_args") {
      DTF_ASSIGN_OR_RETURN(p.sbatch_args, ReadArgs(reader, value, path));
    } else if (name == "srun_args") {
      DTF_ASSIGN_OR_RETURN(p.srun_args, ReadArgs(reader, value, path));
    } else {
      DTF_ASSIGN_OR_RETURN(std::string s, ReadOneLine(reader, value, path));
      if (name == "time_limit") {
        Status valid = ValidateSlurmTimeLimit(s);
        if (!valid.ok()) return reader.Error(value, path, Message(valid));
        p.time_limit = std::move(s);
      } else if (name == "run_dir") {
        p.run_dir = toml_util::ResolvePath(std::string(profile_dir), s);
      } else {
        if (s.find_first_of(" \t") != std::string::npos) {
          return reader.Error(
              value, path,
              StrCat("expected one word, got ", toml_util::Text(value)));
        }
        if (name == "partition") p.partition = std::move(s);
        if (name == "account") p.account = std::move(s);
        if (name == "constraint") p.constraint = std::move(s);
      }
    }
  }
  return p;
}

const SlurmProfile& SlurmTableOf(const Profile& profile) {
  static const SlurmProfile kDefaults;
  const SlurmProfile* table = profile.table.Get<SlurmProfile>();
  return table != nullptr ? *table : kDefaults;
}

SlurmProfile& MutableSlurmTable(Profile* profile) {
  return profile->table.Mutable<SlurmProfile>();
}

}  // namespace dtf::launch::slurm
