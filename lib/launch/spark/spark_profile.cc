#include "lib/launch/spark/spark_profile.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"
#include "lib/launch/backend_table.h"

namespace dtf::launch::spark {
namespace {

using toml_util::Reader;

Status CheckMaster(const Reader& reader, const toml::node& node,
                   std::string_view key, std::string_view master) {
  if (master == "yarn" || master.starts_with("local-cluster[") ||
      master.starts_with("local[") || master == "local") {
    return OkStatus();
  }
  if (master.starts_with("spark://")) {
    if (!StandaloneMaster(master)) {
      return reader.Error(
          node, key,
          StrCat("expected spark://HOST:PORT, got ", toml_util::Text(node)));
    }
    return OkStatus();
  }
  return reader.Error(
      node, key,
      StrCat("expected \"spark://HOST:PORT\" (a standalone master), \"yarn\" "
             "or \"local-cluster[N,CORES,MB]\", got ",
             toml_util::Text(node)));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ReadConf(
    const Reader& reader, const toml::node& node, std::string_view key) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return reader.Error(node, key,
                        StrCat("expected a table of strings "
                               "({ \"spark.foo\" = \"bar\" }), got ",
                               toml_util::Describe(node)));
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : toml_util::InFileOrder(*table)) {
    const std::string path = StrCat(key, ".", toml_util::KeyPart(name->str()));
    if (!name->str().starts_with("spark.")) {
      return reader.Error(name->source(), path,
                          "a Spark setting's name starts with \"spark.\"");
    }
    if (name->str().find_first_of(" \t=\n") != std::string::npos) {
      return reader.Error(name->source(), path,
                          "a Spark setting's name holds no spaces or '='");
    }
    DTF_ASSIGN_OR_RETURN(std::string v, ReadOneLine(reader, *value, path));
    out.emplace_back(std::string(name->str()), std::move(v));
  }
  return out;
}

}  // namespace

std::optional<std::pair<std::string, int>> StandaloneMaster(
    std::string_view master) {
  if (!master.starts_with("spark://")) return std::nullopt;
  std::string_view rest = master.substr(8);
  rest = rest.substr(0, rest.find(','));
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view port_text = rest.substr(colon + 1);
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(),
                                   port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 1 || port > 65535) {
    return std::nullopt;
  }
  return std::make_pair(std::string(rest.substr(0, colon)), port);
}

Status CheckSparkProfileKeys(const Reader& reader,
                             const toml_util::Table& profile) {
  return reader.CheckKnownKeys(
      profile.table, "",
      {"backend", "ps", "workers", "threads", "env", "max_restarts", "tls",
       "spark", "s3"},
      [](std::string_view name) -> std::string {
        if (name == "base_port") {
          return "not for backend = \"spark\" (each task picks a free port "
                 "on its executor)";
        }
        if (name == "device" || name == "gpus") {
          return "not for backend = \"spark\" (Spark runs on CPUs here)";
        }
        if (name == "host" || name == "hosts" || name == "hostfile" ||
            name == "work_dir" || name == "with_data" || name == "ssh") {
          return "not for backend = \"spark\" (Spark chooses the executors; "
                 "spark.run_dir is the shared directory)";
        }
        return "";
      });
}

StatusOr<SparkProfile> ReadSparkProfile(const Reader& reader,
                                        const toml_util::Table& profile,
                                        std::string_view profile_dir) {
  const std::initializer_list<std::string_view> kSparkKeys = {
      "master",          "spark_submit", "deploy_mode", "executor_cores",
      "executor_memory", "python",       "slot_wait",   "ship",
      "run_dir",         "conf"};
  SparkProfile p;
  DTF_ASSIGN_OR_RETURN(const toml::table* table,
                       BackendTable(reader, profile, "spark", kSparkKeys));
  if (table == nullptr) {
    return reader.Error(profile.table.source(), "spark",
                        "backend = \"spark\" needs a [spark] table with "
                        "master = \"spark://HOST:PORT\" (or \"yarn\")");
  }
  for (const auto& [key, value_ptr] : toml_util::InFileOrder(*table)) {
    const std::string_view name = key->str();
    const std::string path = StrCat("spark.", toml_util::KeyPart(name));
    const toml::node& value = *value_ptr;
    p.where[path] = WhereOf(reader, value);
    if (name == "executor_cores") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1, 1024));
      p.executor_cores = static_cast<int>(v);
    } else if (name == "slot_wait") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1, 86400));
      p.slot_wait = static_cast<int>(v);
    } else if (name == "ship") {
      DTF_ASSIGN_OR_RETURN(p.ship, reader.GetBool(value, path));
    } else if (name == "conf") {
      DTF_ASSIGN_OR_RETURN(p.conf, ReadConf(reader, value, path));
    } else if (name == "deploy_mode") {
      DTF_ASSIGN_OR_RETURN(
          const int mode, reader.GetChoice(value, path, {"client", "cluster"}));
      if (mode == 1) {
        return reader.Error(
            value, path,
            "\"cluster\" is not supported: dtf launch runs the driver beside "
            "it (\"client\") so that it can stop the application and read "
            "its end; use \"client\"");
      }
      p.deploy_mode = "client";
    } else {
      DTF_ASSIGN_OR_RETURN(std::string s, ReadOneLine(reader, value, path));
      if (name == "master") {
        DTF_RETURN_IF_ERROR(CheckMaster(reader, value, path, s));
        p.master = std::move(s);
      } else if (name == "run_dir") {
        p.run_dir = toml_util::ResolvePath(std::string(profile_dir), s);
      } else if (name == "spark_submit") {
        p.spark_submit = std::move(s);
      } else if (name == "python") {
        p.python = std::move(s);
      } else if (name == "executor_memory") {
        if (s.find_first_of(" \t") != std::string::npos) {
          return reader.Error(value, path,
                              StrCat("expected a size such as \"1g\", got ",
                                     toml_util::Text(value)));
        }
        p.executor_memory = std::move(s);
      }
    }
  }
  if (p.master.empty()) {
    return reader.Error(*table, "spark.master",
                        "missing: name the cluster (\"spark://HOST:7077\" "
                        "or \"yarn\")");
  }
  return p;
}

const SparkProfile& SparkTableOf(const Profile& profile) {
  static const SparkProfile kDefaults;
  const SparkProfile* table = profile.table.Get<SparkProfile>();
  return table != nullptr ? *table : kDefaults;
}

SparkProfile& MutableSparkTable(Profile* profile) {
  return profile->table.Mutable<SparkProfile>();
}

}  // namespace dtf::launch::spark
