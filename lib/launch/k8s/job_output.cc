#include "lib/launch/k8s/job_output.h"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>

#include "lib/base/strings.h"

namespace dtf::launch::k8s {

namespace {

// The string at `path` of the TOML `text`, if it parses and holds one.
std::optional<std::string> TomlString(std::string_view text,
                                      std::string_view path) {
  try {
    const toml::table table = toml::parse(text);
    if (const auto* value = table.at_path(path).as_string()) {
      return value->get();
    }
  } catch (const toml::parse_error&) {
  }
  return std::nullopt;
}

}  // namespace

std::string PodOutputDir(std::string_view job_text,
                         const std::vector<std::string>& sets,
                         const KubernetesProfile& p) {
  std::string dir =
      TomlString(job_text, "train.output_dir").value_or(std::string("out"));
  constexpr std::string_view kSet = "train.output_dir=";
  for (const std::string& set : sets) {
    if (!set.starts_with(kSet)) continue;
    const std::string value = set.substr(kSet.size());
    // A --set value is TOML when it parses as such ("\"/out/x\""), else
    // the text itself.
    dir = TomlString(StrCat("v = ", value), "v").value_or(value);
  }
  // An object store's URL names the same prefix from every pod.
  if (dir.starts_with("s3://")) return dir;
  std::filesystem::path path(dir);
  if (path.is_relative()) path = std::filesystem::path(p.job_dir) / path;
  return path.lexically_normal().string();
}

std::string LostOutputWarning(const std::string& output_dir,
                              const KubernetesProfile& p) {
  // A bucket outlives the pods (each task keeps a local mirror of it).
  if (output_dir.starts_with("s3://")) return "";
  if (p.output.kind != DataVolume::Kind::kNone) {
    const std::string& mount = p.output.mount_path;
    if (output_dir == mount || output_dir.starts_with(StrCat(mount, "/"))) {
      return "";
    }
  }
  const auto where = p.where.find("kubernetes.output");
  return StrCat(
      "kubernetes: the pods write train.output_dir (", output_dir,
      ") where nothing outlives them",
      p.output.kind == DataVolume::Kind::kNone
          ? std::string()
          : StrCat(
                ", not on kubernetes.output (mounted at ", p.output.mount_path,
                where != p.where.end() ? StrCat(", ", where->second) : "", ")"),
      ": the run's checkpoints and exported model are lost with its pods, "
      "and a replaced pod starts over; set kubernetes.output (a "
      "ReadWriteMany pvc, or a host_path) and train.output_dir under its "
      "mount_path");
}

}  // namespace dtf::launch::k8s
