// The [kubernetes] table of a backend = "kubernetes" profile: every key,
// the defaults, and errors at file:line:col.
#include "lib/launch/k8s/k8s_profile.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/profile.h"

namespace dtf::launch::k8s {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  StatusOr<Profile> p = ParseProfile(text, "profiles/k8s.toml", "k8s");
  EXPECT_FALSE(p.ok()) << text;
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(p.status()));
}

constexpr char kMinimal[] =
    "backend = \"kubernetes\"\n[kubernetes]\nimage = \"dtf:0.1.0\"\n";

TEST(KubernetesProfile, Defaults) {
  StatusOr<Profile> p = ParseProfile(kMinimal, "profiles/k8s.toml", "k8s");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->backend, BackendKind::kKubernetes);
  const KubernetesProfile& k = KubernetesTableOf(*p);
  EXPECT_EQ(k.ns, "default");
  EXPECT_EQ(k.image, "dtf:0.1.0");
  EXPECT_EQ(k.flavour, Flavour::kJob);
  EXPECT_EQ(k.port, 2222);
  EXPECT_EQ(k.cluster_domain, "cluster.local");
  EXPECT_EQ(k.job_dir, "/job");
  EXPECT_EQ(k.data.kind, DataVolume::Kind::kNone);
  EXPECT_TRUE(k.tolerations.empty());
  EXPECT_EQ(p->ps, 1);
  EXPECT_EQ(p->workers, 2);
}

TEST(KubernetesProfile, ReadsEveryKey) {
  StatusOr<Profile> p = ParseProfile(R"(backend = "kubernetes"
ps = 2
workers = 4
max_restarts = 3
[kubernetes]
namespace = "ml"
image = "registry.example/ml/dtf:0.1.0"
flavour = "tfjob"
port = 3333
cluster_domain = "cluster.example"
node_selector = { "kubernetes.io/arch" = "amd64", pool = "gpu" }
tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" },
               { key = "dedicated", value = "ml" }]
service_account = "dtf-runner"
image_pull_secret = "regcred"
data = { pvc = "adult-data", mount_path = "/mnt/data" }
job_dir = "/work/job"
gen_records = true
context = "prod"
[kubernetes.ps]
requests = { cpu = "500m", memory = "1Gi" }
[kubernetes.worker]
requests = { cpu = 2, memory = "4Gi" }
limits = { cpu = "4", memory = "8Gi", gpu = 1 }
)",
                                     "profiles/k8s.toml", "k8s");
  ASSERT_TRUE(p.ok()) << p.status();
  const KubernetesProfile& k = KubernetesTableOf(*p);
  EXPECT_EQ(k.ns, "ml");
  EXPECT_EQ(k.flavour, Flavour::kTfJob);
  EXPECT_EQ(k.port, 3333);
  EXPECT_EQ(k.cluster_domain, "cluster.example");
  EXPECT_EQ(k.node_selector.at("pool"), "gpu");
  EXPECT_EQ(k.node_selector.at("kubernetes.io/arch"), "amd64");
  ASSERT_EQ(k.tolerations.size(), 2u);
  EXPECT_EQ(k.tolerations[0].op, "Exists");
  EXPECT_EQ(k.tolerations[0].effect, "NoSchedule");
  EXPECT_EQ(k.tolerations[1].op, "Equal");
  EXPECT_EQ(k.tolerations[1].value, "ml");
  EXPECT_EQ(k.service_account, "dtf-runner");
  EXPECT_EQ(k.image_pull_secret, "regcred");
  EXPECT_EQ(k.data.kind, DataVolume::Kind::kPvc);
  EXPECT_EQ(k.data.source, "adult-data");
  EXPECT_EQ(k.data.mount_path, "/mnt/data");
  EXPECT_EQ(k.job_dir, "/work/job");
  EXPECT_EQ(k.context, "prod");
  EXPECT_TRUE(k.gen_records);
  EXPECT_EQ(k.ps.requests.cpu, "500m");
  EXPECT_EQ(k.worker.requests.cpu, "2");
  EXPECT_EQ(k.worker.limits.memory, "8Gi");
  EXPECT_EQ(k.worker.limits.gpu, 1);
  EXPECT_EQ(k.where.at("kubernetes.image"), "profiles/k8s.toml:7:9");
  EXPECT_EQ(p->max_restarts, 3);
}

TEST(KubernetesProfile, DataSources) {
  auto data = [](std::string_view d) {
    return ParseProfile(StrCat(kMinimal, "data = ", d, "\n"),
                        "profiles/k8s.toml", "k8s");
  };
  EXPECT_EQ(KubernetesTableOf(*data("{ host_path = \"/srv/data\" }")).data.kind,
            DataVolume::Kind::kHostPath);
  EXPECT_EQ(KubernetesTableOf(*data("{ image = \"registry.example/adult:1\" }"))
                .data.kind,
            DataVolume::Kind::kImage);
  EXPECT_THAT(
      ErrorOf(StrCat(kMinimal, "data = { pvc = \"a\", image = \"b\" }\n")),
      HasSubstr("profiles/k8s.toml:4:29: kubernetes.data.image: give "
                "one of pvc, host_path and image"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "data = { mount_path = \"/d\" }\n")),
              HasSubstr("profiles/k8s.toml:4:8: kubernetes.data: give one of"));
  EXPECT_THAT(
      ErrorOf(StrCat(kMinimal, "data = { host_path = \"rel\" }\n")),
      HasSubstr("kubernetes.data.host_path: expected an absolute path"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "data = { pvc = \"Bad_Name\" }\n")),
              HasSubstr("kubernetes.data.pvc: expected a DNS label"));
}

// kubernetes.output: where the run writes, a PVC or a node's path only.
TEST(KubernetesProfile, OutputVolume) {
  auto output = [](std::string_view d) {
    return ParseProfile(StrCat(kMinimal, "output = ", d, "\n"),
                        "profiles/k8s.toml", "k8s");
  };
  StatusOr<Profile> p = output("{ pvc = \"dtf-out\" }");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(KubernetesTableOf(*p).output.kind, DataVolume::Kind::kPvc);
  EXPECT_EQ(KubernetesTableOf(*p).output.source, "dtf-out");
  EXPECT_EQ(KubernetesTableOf(*p).output.mount_path, "/out");
  EXPECT_EQ(KubernetesTableOf(*p).data.kind, DataVolume::Kind::kNone);
  p = output("{ host_path = \"/srv/out\", mount_path = \"/results\" }");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(KubernetesTableOf(*p).output.kind, DataVolume::Kind::kHostPath);
  EXPECT_EQ(KubernetesTableOf(*p).output.mount_path, "/results");
  EXPECT_EQ(KubernetesTableOf(*p).where.at("kubernetes.output.mount_path"),
            "profiles/k8s.toml:4:49");
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "output = { image = \"r/o:1\" }\n")),
              HasSubstr("profiles/k8s.toml:4:20: kubernetes.output.image: an "
                        "image volume is read-only"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "output = { claim = \"x\" }\n")),
              HasSubstr("kubernetes.output.claim"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "output = { }\n")),
              HasSubstr("kubernetes.output: give one of pvc and host_path"));
}

TEST(KubernetesProfile, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(ErrorOf("backend = \"kubernetes\"\n[kubernetes]\nnamespace = "
                    "\"ml\"\n"),
            "profiles/k8s.toml:2:1: kubernetes.image: required: the image the "
            "pods run (dtf pack image, pushed to a registry the cluster pulls "
            "from)");
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "imag = \"x\"\n")),
              HasSubstr("profiles/k8s.toml:4:1: kubernetes.imag: unknown key "
                        "(did you mean image?)"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "flavour = \"pytorchjob\"\n")),
              HasSubstr("profiles/k8s.toml:4:11: kubernetes.flavour:"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "namespace = \"ML\"\n")),
              HasSubstr("kubernetes.namespace: expected a DNS label"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "port = 0\n")),
              HasSubstr("profiles/k8s.toml:4:8: kubernetes.port:"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal,
                             "[kubernetes.worker]\nlimits = { cpu = "
                             "\"two\" }\n")),
              HasSubstr("profiles/k8s.toml:5:18: kubernetes.worker.limits.cpu: "
                        "expected a Kubernetes quantity"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal,
                             "[kubernetes.worker]\nrequests = { gpu = 1 }\n"
                             "limits = { gpu = 2 }\n")),
              HasSubstr("GPU requests must equal GPU limits"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "[kubernetes.worker]\ncpus = 1\n")),
              HasSubstr("kubernetes.worker.cpus: unknown key"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal,
                             "tolerations = [{ operator = \"Exists\", "
                             "value = \"x\" }]\n")),
              HasSubstr("kubernetes.tolerations[0]: operator = \"Exists\" "
                        "takes no value"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "job_dir = \"job\"\n")),
              HasSubstr("kubernetes.job_dir: expected an absolute path"));
  EXPECT_THAT(ErrorOf(StrCat("base_port = 9000\n", kMinimal)),
              HasSubstr("profiles/k8s.toml:1:1: base_port: not for backend = "
                        "\"kubernetes\" (set kubernetes.port)"));
  EXPECT_THAT(ErrorOf(StrCat("hosts = [\"a\"]\n", kMinimal)),
              HasSubstr("the cluster places the pods"));
  EXPECT_THAT(ErrorOf(StrCat(kMinimal, "service_account = \"Bad\"\n")),
              HasSubstr("kubernetes.service_account: expected a Kubernetes "
                        "object name"));
}

TEST(KubernetesProfile, Quantities) {
  for (const char* q : {"1", "0.5", "500m", "4Gi", "1e3", "128974848", ".5"}) {
    EXPECT_TRUE(IsQuantity(q)) << q;
  }
  for (const char* q : {"", "two", "4GB", "1.2.3", "Gi"}) {
    EXPECT_FALSE(IsQuantity(q)) << q;
  }
  EXPECT_TRUE(IsDnsLabel("dtf-1"));
  EXPECT_FALSE(IsDnsLabel("-dtf"));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
}

}  // namespace
}  // namespace dtf::launch::k8s
