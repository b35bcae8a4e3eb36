#include "lib/launch/k8s/k8s_profile.h"

#include <algorithm>
#include <initializer_list>
#include <regex>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/base/toml_util.h"

namespace dtf::launch::k8s {
namespace {

using toml_util::Reader;

std::string K8sWhere(const Reader& reader, const toml::node& node) {
  const toml::source_position& p = node.source().begin;
  return StrCat(reader.file(), ":", std::max<uint32_t>(p.line, 1), ":",
                std::max<uint32_t>(p.column, 1));
}

Status UnknownKey(const Reader& reader, const toml::key& key,
                  const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
  const std::string_view best = toml_util::Closest(key.str(), allowed);
  return reader.Error(key.source(), path,
                      best.empty()
                          ? StrCat("unknown key (expected one of ",
                                   toml_util::Join(allowed), ")")
                          : StrCat("unknown key (did you mean ", best, "?)"));
}

StatusOr<const toml::table*> K8sTable(const Reader& reader,
                                      const toml::node& node,
                                      std::string_view path) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return reader.Error(
        node, path,
        StrCat("expected a table, got ", toml_util::Describe(node)));
  }
  return table;
}

// A non-empty string without control characters.
StatusOr<std::string> K8sString(const Reader& reader, const toml::node& node,
                                std::string_view path) {
  DTF_ASSIGN_OR_RETURN(std::string s, reader.GetString(node, path));
  if (s.empty()) return reader.Error(node, path, "must not be empty");
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return reader.Error(node, path, "must not hold control characters");
    }
  }
  return s;
}

StatusOr<std::string> DnsName(const Reader& reader, const toml::node& node,
                              std::string_view path) {
  DTF_ASSIGN_OR_RETURN(std::string s, K8sString(reader, node, path));
  if (!IsDnsLabel(s)) {
    return reader.Error(node, path,
                        StrCat("expected a DNS label (lowercase letters, "
                               "digits and '-', at most 63), got ",
                               toml_util::Text(node)));
  }
  return s;
}

StatusOr<Resources> ReadResources(const Reader& reader, const toml::node& node,
                                  const std::string& path,
                                  KubernetesProfile* p) {
  DTF_ASSIGN_OR_RETURN(const toml::table* table, K8sTable(reader, node, path));
  Resources r;
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string sub = StrCat(path, ".", toml_util::KeyPart(key->str()));
    p->where[sub] = K8sWhere(reader, *value);
    if (key->str() == "gpu") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(*value, sub, 0, 64));
      r.gpu = static_cast<int>(v);
    } else if (key->str() == "cpu" || key->str() == "memory") {
      std::string q;
      if (value->is_integer()) {
        q = std::to_string(value->as_integer()->get());
      } else {
        DTF_ASSIGN_OR_RETURN(q, K8sString(reader, *value, sub));
      }
      if (!IsQuantity(q)) {
        return reader.Error(*value, sub,
                            StrCat("expected a Kubernetes quantity such as "
                                   "\"2\", \"500m\" or \"4Gi\", got ",
                                   toml_util::Text(*value)));
      }
      (key->str() == "cpu" ? r.cpu : r.memory) = q;
    } else {
      return UnknownKey(reader, *key, sub, {"cpu", "memory", "gpu"});
    }
  }
  return r;
}

StatusOr<RoleResources> ReadRole(const Reader& reader, const toml::node& node,
                                 const std::string& path,
                                 KubernetesProfile* p) {
  DTF_ASSIGN_OR_RETURN(const toml::table* table, K8sTable(reader, node, path));
  RoleResources r;
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string sub = StrCat(path, ".", toml_util::KeyPart(key->str()));
    if (key->str() == "requests") {
      DTF_ASSIGN_OR_RETURN(r.requests, ReadResources(reader, *value, sub, p));
    } else if (key->str() == "limits") {
      DTF_ASSIGN_OR_RETURN(r.limits, ReadResources(reader, *value, sub, p));
    } else {
      return UnknownKey(reader, *key, sub, {"requests", "limits"});
    }
  }
  if (r.requests.gpu != 0 && r.limits.gpu != 0 &&
      r.requests.gpu != r.limits.gpu) {
    return reader.Error(
        *table->get("requests"), StrCat(path, ".requests.gpu"),
        "GPU requests must equal GPU limits (Kubernetes does not overcommit "
        "GPUs); set limits.gpu alone");
  }
  return r;
}

StatusOr<Toleration> ReadToleration(const Reader& reader,
                                    const toml::node& node,
                                    const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const toml::table* table, K8sTable(reader, node, path));
  Toleration t;
  for (const auto& [key, value] : toml_util::InFileOrder(*table)) {
    const std::string sub = StrCat(path, ".", toml_util::KeyPart(key->str()));
    const std::string_view name = key->str();
    if (name == "key") {
      DTF_ASSIGN_OR_RETURN(t.key, K8sString(reader, *value, sub));
    } else if (name == "value") {
      DTF_ASSIGN_OR_RETURN(t.value, reader.GetString(*value, sub));
    } else if (name == "operator") {
      DTF_ASSIGN_OR_RETURN(const int i,
                           reader.GetChoice(*value, sub, {"Equal", "Exists"}));
      t.op = i == 0 ? "Equal" : "Exists";
    } else if (name == "effect") {
      constexpr std::string_view kEffects[] = {"NoSchedule", "PreferNoSchedule",
                                               "NoExecute"};
      DTF_ASSIGN_OR_RETURN(
          const int i,
          reader.GetChoice(*value, sub,
                           {kEffects[0], kEffects[1], kEffects[2]}));
      t.effect = std::string(kEffects[i]);
    } else {
      return UnknownKey(reader, *key, sub,
                        {"key", "operator", "value", "effect"});
    }
  }
  if (t.op == "Exists" && !t.value.empty()) {
    return reader.Error(node, path, "operator = \"Exists\" takes no value");
  }
  if (t.key.empty() && t.op != "Exists") {
    return reader.Error(node, path,
                        "a toleration without a key needs operator = "
                        "\"Exists\"");
  }
  return t;
}

// kubernetes.data (read-only; a PVC, a node's path or an image) or
// kubernetes.output (written: a PVC or a node's path), by `key`.
StatusOr<DataVolume> ReadVolume(const Reader& reader, const toml::node& node,
                                std::string_view key, KubernetesProfile* p) {
  const std::string path = StrCat("kubernetes.", key);
  const bool written = key == "output";
  DTF_ASSIGN_OR_RETURN(const toml::table* table, K8sTable(reader, node, path));
  DataVolume d;
  if (written) d.mount_path = "/out";
  const std::string_view one_of = written
                                      ? "give one of pvc and host_path"
                                      : "give one of pvc, host_path and image";
  for (const auto& [name_key, value] : toml_util::InFileOrder(*table)) {
    const std::string_view name = name_key->str();
    const std::string sub = StrCat(path, ".", toml_util::KeyPart(name));
    p->where[sub] = K8sWhere(reader, *value);
    if (name == "mount_path") {
      DTF_ASSIGN_OR_RETURN(d.mount_path, K8sString(reader, *value, sub));
      if (d.mount_path[0] != '/' || d.mount_path == "/") {
        return reader.Error(*value, sub,
                            "expected an absolute path other than /");
      }
      continue;
    }
    DataVolume::Kind kind;
    if (name == "pvc") {
      kind = DataVolume::Kind::kPvc;
    } else if (name == "host_path") {
      kind = DataVolume::Kind::kHostPath;
    } else if (name == "image" && !written) {
      kind = DataVolume::Kind::kImage;
    } else if (name == "image") {
      return reader.Error(*value, sub,
                          "an image volume is read-only, and the run writes "
                          "its checkpoints and model here; give a pvc or a "
                          "host_path");
    } else {
      return UnknownKey(
          reader, *name_key, sub,
          written ? std::initializer_list<std::string_view>{"pvc", "host_path",
                                                            "mount_path"}
                  : std::initializer_list<std::string_view>{
                        "pvc", "host_path", "image", "mount_path"});
    }
    if (d.kind != DataVolume::Kind::kNone) {
      return reader.Error(*value, sub, one_of);
    }
    d.kind = kind;
    if (kind == DataVolume::Kind::kPvc) {
      DTF_ASSIGN_OR_RETURN(d.source, DnsName(reader, *value, sub));
    } else {
      DTF_ASSIGN_OR_RETURN(d.source, K8sString(reader, *value, sub));
    }
    if (kind == DataVolume::Kind::kHostPath && d.source[0] != '/') {
      return reader.Error(*value, sub, "expected an absolute path");
    }
  }
  if (d.kind == DataVolume::Kind::kNone) {
    return reader.Error(node, path, one_of);
  }
  return d;
}

}  // namespace

bool IsQuantity(std::string_view text) {
  static const std::regex kQuantity(
      R"(^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$)");
  return std::regex_match(text.begin(), text.end(), kQuantity);
}

bool IsDnsLabel(std::string_view text) {
  if (text.empty() || text.size() > 63) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (!alnum(text.front()) || !alnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return alnum(c) || c == '-'; });
}

Status CheckKubernetesProfileKeys(const Reader& reader,
                                  const toml_util::Table& profile) {
  return reader.CheckKnownKeys(
      profile.table, "",
      {"backend", "ps", "workers", "threads", "env", "max_restarts", "device",
       "tls", "kubernetes", "s3", "min_workers", "max_workers"},
      [](std::string_view name) -> std::string {
        if (name == "base_port") {
          return "not for backend = \"kubernetes\" (set kubernetes.port)";
        }
        if (name == "gpus") {
          return "not for backend = \"kubernetes\" (set "
                 "kubernetes.worker.limits.gpu)";
        }
        if (name == "host" || name == "hosts" || name == "hostfile" ||
            name == "work_dir" || name == "with_data" || name == "ssh" ||
            name == "slurm") {
          return "not for backend = \"kubernetes\" (the cluster places the "
                 "pods; kubernetes.data mounts the data)";
        }
        return "";
      });
}

StatusOr<KubernetesProfile> ReadKubernetesProfile(
    const Reader& reader, const toml_util::Table& profile) {
  const std::initializer_list<std::string_view> kKeys = {"namespace",
                                                         "image",
                                                         "flavour",
                                                         "port",
                                                         "cluster_domain",
                                                         "ps",
                                                         "worker",
                                                         "node_selector",
                                                         "tolerations",
                                                         "service_account",
                                                         "image_pull_secret",
                                                         "data",
                                                         "output",
                                                         "context",
                                                         "job_dir",
                                                         "gen_records"};
  KubernetesProfile p;
  const toml::node* node = profile.table.get("kubernetes");
  if (node == nullptr) {
    const toml::node* backend = profile.table.get("backend");
    return reader.Error(backend ? backend->source() : toml::source_region{},
                        "kubernetes",
                        "backend = \"kubernetes\" needs a [kubernetes] table "
                        "with at least image = \"...\"");
  }
  DTF_ASSIGN_OR_RETURN(const toml::table* table,
                       K8sTable(reader, *node, "kubernetes"));
  for (const auto& [key, value_ptr] : toml_util::InFileOrder(*table)) {
    const std::string_view name = key->str();
    const std::string path = StrCat("kubernetes.", toml_util::KeyPart(name));
    if (std::find(kKeys.begin(), kKeys.end(), name) == kKeys.end()) {
      return UnknownKey(reader, *key, path, kKeys);
    }
    const toml::node& value = *value_ptr;
    p.where[path] = K8sWhere(reader, value);
    if (name == "namespace") {
      DTF_ASSIGN_OR_RETURN(p.ns, DnsName(reader, value, path));
    } else if (name == "image") {
      DTF_ASSIGN_OR_RETURN(p.image, K8sString(reader, value, path));
      if (p.image.find_first_of(" \t") != std::string::npos) {
        return reader.Error(value, path, "must not hold spaces");
      }
    } else if (name == "flavour") {
      DTF_ASSIGN_OR_RETURN(const int i,
                           reader.GetChoice(value, path, {"job", "tfjob"}));
      p.flavour = i == 0 ? Flavour::kJob : Flavour::kTfJob;
    } else if (name == "port") {
      DTF_ASSIGN_OR_RETURN(const int64_t v,
                           reader.GetIntInRange(value, path, 1, 65535));
      p.port = static_cast<int>(v);
    } else if (name == "cluster_domain") {
      DTF_ASSIGN_OR_RETURN(p.cluster_domain, K8sString(reader, value, path));
    } else if (name == "ps") {
      DTF_ASSIGN_OR_RETURN(p.ps, ReadRole(reader, value, path, &p));
    } else if (name == "worker") {
      DTF_ASSIGN_OR_RETURN(p.worker, ReadRole(reader, value, path, &p));
    } else if (name == "node_selector") {
      DTF_ASSIGN_OR_RETURN(const toml::table* selector,
                           K8sTable(reader, value, path));
      for (const auto& [k, v] : toml_util::InFileOrder(*selector)) {
        const std::string sub = StrCat(path, ".", toml_util::KeyPart(k->str()));
        DTF_ASSIGN_OR_RETURN(p.node_selector[std::string(k->str())],
                             reader.GetString(*v, sub));
      }
    } else if (name == "tolerations") {
      const toml::array* array = value.as_array();
      if (array == nullptr) {
        return reader.Error(value, path,
                            StrCat("expected an array of tables, got ",
                                   toml_util::Describe(value)));
      }
      for (size_t i = 0; i < array->size(); ++i) {
        DTF_ASSIGN_OR_RETURN(
            Toleration t,
            ReadToleration(reader, *array->get(i), StrCat(path, "[", i, "]")));
        p.tolerations.push_back(std::move(t));
      }
    } else if (name == "service_account" || name == "image_pull_secret") {
      DTF_ASSIGN_OR_RETURN(std::string s, K8sString(reader, value, path));
      // Subdomain names: labels joined by dots.
      bool ok = s.size() <= 253;
      for (size_t pos = 0; ok;) {
        const size_t dot = s.find('.', pos);
        ok = IsDnsLabel(std::string_view(s).substr(
            pos, dot == std::string::npos ? std::string::npos : dot - pos));
        if (dot == std::string::npos) break;
        pos = dot + 1;
      }
      if (!ok) {
        return reader.Error(value, path,
                            StrCat("expected a Kubernetes object name, got ",
                                   toml_util::Text(value)));
      }
      (name == "service_account" ? p.service_account : p.image_pull_secret) =
          std::move(s);
    } else if (name == "data" || name == "output") {
      DataVolume& volume = name == "data" ? p.data : p.output;
      DTF_ASSIGN_OR_RETURN(volume, ReadVolume(reader, value, name, &p));
    } else if (name == "job_dir") {
      DTF_ASSIGN_OR_RETURN(p.job_dir, K8sString(reader, value, path));
      if (p.job_dir[0] != '/' || p.job_dir == "/") {
        return reader.Error(value, path,
                            "expected an absolute path other than /");
      }
    } else if (name == "gen_records") {
      DTF_ASSIGN_OR_RETURN(p.gen_records, reader.GetBool(value, path));
    } else if (name == "context") {
      DTF_ASSIGN_OR_RETURN(p.context, K8sString(reader, value, path));
    }
  }
  if (p.image.empty()) {
    return reader.Error(*node, "kubernetes.image",
                        "required: the image the pods run (dtf pack image, "
                        "pushed to a registry the cluster pulls from)");
  }
  return p;
}

const KubernetesProfile& KubernetesTableOf(const Profile& profile) {
  static const KubernetesProfile kDefaults;
  const KubernetesProfile* table = profile.table.Get<KubernetesProfile>();
  return table != nullptr ? *table : kDefaults;
}

KubernetesProfile& MutableKubernetesTable(Profile* profile) {
  return profile->table.Mutable<KubernetesProfile>();
}

}  // namespace dtf::launch::k8s
