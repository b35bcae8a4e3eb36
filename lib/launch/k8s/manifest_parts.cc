#include "lib/launch/k8s/manifest_parts.h"

#include <cstdint>

#include "lib/base/strings.h"

namespace dtf::launch::k8s {
namespace {

Manifest ResourceList(const Resources& res) {
  Manifest list = Manifest::object();
  if (!res.cpu.empty()) list["cpu"] = res.cpu;
  if (!res.memory.empty()) list["memory"] = res.memory;
  if (res.gpu > 0) list["nvidia.com/gpu"] = std::to_string(res.gpu);
  return list;
}

}  // namespace

Manifest RunLabels(const std::string& run_id) {
  Manifest labels = Manifest::object();
  labels["app.kubernetes.io/name"] = "dtf";
  labels["app.kubernetes.io/managed-by"] = "dtf";
  labels[kRunIdLabel] = run_id;
  return labels;
}

Manifest RunMetadata(const KubernetesProfile& p, const std::string& run_id,
                     const std::string& name) {
  Manifest m;
  m["name"] = name;
  m["namespace"] = p.ns;
  m["labels"] = RunLabels(run_id);
  return m;
}

Manifest ContainerResources(const RoleResources& role) {
  Manifest out = Manifest::object();
  Resources limits = role.limits;
  // GPUs are asked for as limits; requests equal them.
  if (limits.gpu == 0) limits.gpu = role.requests.gpu;
  Manifest requests = ResourceList(role.requests);
  Manifest lim = ResourceList(limits);
  if (!requests.empty()) out["requests"] = requests;
  if (!lim.empty()) out["limits"] = lim;
  return out;
}

Manifest EnvEntries(const std::map<std::string, std::string>& env) {
  Manifest entries = Manifest::array();
  for (const auto& [name, value] : env) {
    Manifest e;
    e["name"] = name;
    e["value"] = value;
    entries.push_back(e);
  }
  return entries;
}

namespace {

Manifest VolumeOf(const DataVolume& d, const char* name, bool read_only) {
  if (d.kind == DataVolume::Kind::kNone) return nullptr;
  Manifest data;
  data["name"] = name;
  switch (d.kind) {
    case DataVolume::Kind::kPvc:
      data["persistentVolumeClaim"]["claimName"] = d.source;
      if (read_only) data["persistentVolumeClaim"]["readOnly"] = true;
      break;
    case DataVolume::Kind::kHostPath:
      data["hostPath"]["path"] = d.source;
      data["hostPath"]["type"] = read_only ? "Directory" : "DirectoryOrCreate";
      break;
    case DataVolume::Kind::kImage:
      data["image"]["reference"] = d.source;
      data["image"]["pullPolicy"] = "IfNotPresent";
      break;
    case DataVolume::Kind::kNone:
      break;
  }
  return data;
}

Manifest MountOf(const DataVolume& d, const char* name, bool read_only) {
  if (d.kind == DataVolume::Kind::kNone) return nullptr;
  Manifest mount;
  mount["name"] = name;
  mount["mountPath"] = d.mount_path;
  if (read_only) mount["readOnly"] = true;
  return mount;
}

}  // namespace

Manifest DataVolumeOf(const KubernetesProfile& p) {
  return VolumeOf(p.data, "dtf-data", true);
}

Manifest DataMountOf(const KubernetesProfile& p) {
  return MountOf(p.data, "dtf-data", true);
}

Manifest OutputVolumeOf(const KubernetesProfile& p) {
  return VolumeOf(p.output, "dtf-output", false);
}

Manifest OutputMountOf(const KubernetesProfile& p) {
  return MountOf(p.output, "dtf-output", false);
}

void AddPodScheduling(const KubernetesProfile& p, Manifest* spec_out) {
  Manifest& spec = *spec_out;
  if (!p.service_account.empty()) {
    spec["serviceAccountName"] = p.service_account;
  }
  if (!p.image_pull_secret.empty()) {
    Manifest s;
    s["name"] = p.image_pull_secret;
    spec["imagePullSecrets"] = Manifest::array({s});
  }
  if (!p.node_selector.empty()) {
    Manifest sel = Manifest::object();
    for (const auto& [k, v] : p.node_selector) sel[k] = v;
    spec["nodeSelector"] = sel;
  }
  if (!p.tolerations.empty()) {
    Manifest tolerations = Manifest::array();
    for (const Toleration& t : p.tolerations) {
      Manifest m;
      if (!t.key.empty()) m["key"] = t.key;
      m["operator"] = t.op;
      if (!t.value.empty()) m["value"] = t.value;
      if (!t.effect.empty()) m["effect"] = t.effect;
      tolerations.push_back(m);
    }
    spec["tolerations"] = tolerations;
  }
}

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n =
        (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t n = uint8_t(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

bool IsObjectKey(std::string_view key) {
  if (key.empty() || key.size() > 253 || key == "." || key == "..") {
    return false;
  }
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_')) {
      return false;
    }
  }
  return true;
}

RenderedObject ObjectOf(std::string file, const Manifest& m) {
  return {std::move(file), m["kind"].get<std::string>(),
          m["metadata"]["name"].get<std::string>(), ToYaml(m)};
}

}  // namespace dtf::launch::k8s
