// lib/launch/k8s: the YAML writer, the manifests of both flavours against
// golden files (validated offline by validate_manifests.py), the kubectl
// command lines, and the error without a cluster.
#include "lib/launch/k8s/manifests.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/yaml_writer.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::k8s {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(YamlWriter, BlockStyleQuotedStringsAndEmptyContainers) {
  Manifest m;
  m["apiVersion"] = "v1";
  m["count"] = 3;
  m["on"] = true;
  m["labels"]["a.b/c"] = "x";
  m["labels"]["1st"] = "01";
  m["empty"] = Manifest::object();
  m["none"] = Manifest::array();
  m["list"] = Manifest::array({"a\nb", 2});
  Manifest item;
  item["name"] = "n";
  item["inner"]["k"] = "v";
  m["items"] = Manifest::array({item});
  EXPECT_EQ(ToYaml(m),
            "apiVersion: \"v1\"\n"
            "count: 3\n"
            "\"on\": true\n"
            "labels:\n"
            "  a.b/c: \"x\"\n"
            "  \"1st\": \"01\"\n"
            "empty: {}\n"
            "none: []\n"
            "list:\n"
            "- \"a\\nb\"\n"
            "- 2\n"
            "items:\n"
            "- name: \"n\"\n"
            "  inner:\n"
            "    k: \"v\"\n");
}

RenderRequest FullRequest(Flavour flavour) {
  RenderRequest r;
  KubernetesProfile& p = r.profile;
  p.ns = "ml";
  p.image = "registry.example/ml/dtf:0.1.0";
  p.flavour = flavour;
  p.worker.requests = {"2", "4Gi", 0};
  p.worker.limits = {"4", "8Gi", 1};
  if (flavour == Flavour::kTfJob) {
    p.ps.requests = {"1", "2Gi", 0};
    p.gen_records = true;
  }
  p.node_selector["kubernetes.io/arch"] = "amd64";
  p.tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  p.service_account = "dtf-runner";
  p.image_pull_secret = "regcred";
  p.data.kind = DataVolume::Kind::kPvc;
  p.data.source = "adult-data";
  p.data.mount_path = "/data";
  p.output.kind = DataVolume::Kind::kPvc;
  p.output.source = "dtf-out";
  p.output.mount_path = "/out";
  p.job_dir = "/job";
  r.run_id = "20261125-120000-abcd";
  r.ps = 2;
  r.workers = 3;
  r.threads = 4;
  r.max_restarts = 2;
  r.sets = {"train.epochs=2"};
  r.env["OMP_NUM_THREADS"] = "4";
  r.job_text = "[train]\nepochs = 1\n";
  // Stand-ins for the PEM text run_tls.h makes.
  r.tls = true;
  r.tls_files = {{"ca.pem", "ca cert\n"}};
  for (const char* task :
       {"ps-0", "ps-1", "worker-0", "worker-1", "worker-2"}) {
    r.tls_files.push_back({StrCat(task, ".pem"), StrCat(task, " cert\n")});
    r.tls_files.push_back({StrCat(task, ".key"), StrCat(task, " key\n")});
  }
  return r;
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

std::string Golden(const std::string& name) {
  return StrCat(DTF_SOURCE_DIR, "/tests/launch/testdata/k8s/", name);
}

void ExpectGolden(const std::string& name, const std::string& text) {
  if (std::getenv("DTF_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomically(Golden(name), text).ok());
  }
  StatusOr<std::string> want = ReadFileToString(Golden(name));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(text, *want) << "regenerate with DTF_UPDATE_GOLDEN=1";
}

// Elastic workers: of 3 workers with min_workers = 2, one index may fail
// for good while the Job goes on.
TEST(RenderManifests, MinWorkersLetsThatManyWorkerIndexesFail) {
  RenderRequest r = FullRequest(Flavour::kJob);
  r.min_workers = 2;
  ASSERT_EQ(r.workers, 3);
  StatusOr<std::vector<RenderedObject>> objects = RenderManifests(r);
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_THAT(JoinDocuments(*objects), HasSubstr("maxFailedIndexes: 1\n"));
}

// Worker slots to start later (max_workers): the Job starts ps + the
// workers started, an elastic Indexed Job (completions = parallelism);
// every slot has its address and certificate, and the pods are told how
// many workers start.
TEST(RenderManifests, MaxWorkersStartsFewerIndexesThanSlots) {
  RenderRequest r = FullRequest(Flavour::kJob);
  ASSERT_EQ(r.workers, 3);
  r.started_workers = 2;
  r.min_workers = 1;
  StatusOr<std::vector<RenderedObject>> objects = RenderManifests(r);
  ASSERT_TRUE(objects.ok()) << objects.status();
  const std::string text = JoinDocuments(*objects);
  EXPECT_THAT(text,
              HasSubstr("  completions: " + std::to_string(r.ps + 2) +
                        "\n  parallelism: " + std::to_string(r.ps + 2) + "\n"));
  EXPECT_THAT(text, HasSubstr("- \"--started-workers\"\n"));
  EXPECT_THAT(text, HasSubstr("maxFailedIndexes: 1\n"));
  const std::string last_slot =
      StrCat(ObjectName(r.run_id), "-", r.ps + 2, ".");
  EXPECT_THAT(text, HasSubstr(last_slot));
  EXPECT_EQ(CountOf(text, "- \"--started-workers\""), 1);
}

TEST(RenderManifests, JobFlavourMatchesItsGolden) {
  StatusOr<std::vector<RenderedObject>> objects =
      RenderManifests(FullRequest(Flavour::kJob));
  ASSERT_TRUE(objects.ok()) << objects.status();
  std::vector<std::string> files;
  for (const RenderedObject& o : *objects) files.push_back(o.file);
  EXPECT_THAT(files, ElementsAre("secret.yaml", "configmap.yaml",
                                 "service.yaml", "job.yaml"));
  const std::string yaml = JoinDocuments(*objects);
  ExpectGolden("job.yaml", yaml);
  // What the pods need of it.
  EXPECT_THAT(yaml, HasSubstr("completionMode: \"Indexed\""));
  EXPECT_THAT(yaml, HasSubstr("completions: 5\n"));
  EXPECT_THAT(yaml, HasSubstr("parallelism: 5\n"));
  // Done when the chief (index 2, after the 2 parameter servers) is.
  EXPECT_THAT(yaml, HasSubstr("- succeededIndexes: \"2\"\n"));
  EXPECT_THAT(yaml, HasSubstr("backoffLimitPerIndex: 2\n"));
  // An index out of restarts fails the Job (no elastic workers).
  EXPECT_THAT(yaml, HasSubstr("maxFailedIndexes: 0\n"));
  EXPECT_THAT(yaml, HasSubstr("podReplacementPolicy: \"Failed\""));
  EXPECT_THAT(yaml, HasSubstr("publishNotReadyAddresses: true"));
  EXPECT_THAT(yaml, HasSubstr("defaultMode: 256\n"));  // 0400
  // The run's Secret is mounted into the keys init container alone; the
  // task's container reads its own keys from a memory volume, and no pod
  // gets a service account token.
  EXPECT_THAT(yaml, HasSubstr("automountServiceAccountToken: false\n"));
  EXPECT_THAT(yaml, HasSubstr("- name: \"dtf-secret\"\n        emptyDir:\n"
                              "          medium: \"Memory\"\n"));
  EXPECT_EQ(CountOf(yaml, "name: \"dtf-run-secret\""), 2);  // volume, mount
  EXPECT_THAT(yaml, HasSubstr("- \"--index-from-env\"\n        - "
                              "\"JOB_COMPLETION_INDEX\"\n        - \"--ps\"\n"
                              "        - \"2\"\n"));
  EXPECT_THAT(yaml,
              HasSubstr("cluster.local:2222,dtf-20261125-120000-abcd-1.dtf-"
                        "20261125-120000-abcd.ml.svc.cluster.local:2222\"\n"));
  // The same request gives the same bytes.
  EXPECT_EQ(JoinDocuments(*RenderManifests(FullRequest(Flavour::kJob))), yaml);
}

TEST(RenderManifests, TfJobFlavourMatchesItsGolden) {
  StatusOr<std::vector<RenderedObject>> objects =
      RenderManifests(FullRequest(Flavour::kTfJob));
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->size(), 3u);
  EXPECT_EQ((*objects)[2].kind, "TFJob");
  const std::string yaml = JoinDocuments(*objects);
  ExpectGolden("tfjob.yaml", yaml);
  EXPECT_THAT(yaml, HasSubstr("cleanPodPolicy: \"Running\""));
  EXPECT_THAT(yaml, HasSubstr("restartPolicy: \"ExitCode\""));
  EXPECT_THAT(yaml, HasSubstr("- name: \"tensorflow\""));
  EXPECT_THAT(yaml, HasSubstr("Chief:\n      replicas: 1\n"));
  EXPECT_THAT(yaml, HasSubstr("PS:\n      replicas: 2\n"));
  EXPECT_THAT(yaml, HasSubstr("Worker:\n      replicas: 2\n"));
  EXPECT_THAT(yaml, Not(HasSubstr("JOB_COMPLETION_INDEX")));
  // Each replica's keys init container first, its task from the template
  // and the operator's replica-index label; then gen-records.
  EXPECT_THAT(yaml,
              HasSubstr("initContainers:\n          - name: \"dtf-keys\""));
  EXPECT_THAT(yaml, HasSubstr("- name: \"gen-records\""));
  EXPECT_THAT(yaml, HasSubstr("- \"--task\"\n            - \"worker:0\""));
  EXPECT_THAT(yaml, HasSubstr("- \"--role\"\n            - \"ps\"\n"));
  EXPECT_THAT(yaml, HasSubstr("- \"--index-offset\"\n            - \"1\""));
  EXPECT_THAT(yaml, HasSubstr("metadata.labels['training.kubeflow.org/"
                              "replica-index']"));
}

TEST(RenderManifests, SecretIsBase64OrAPlaceholder) {
  RenderRequest r = FullRequest(Flavour::kJob);
  r.secret = "0123456789abcdef";
  StatusOr<std::vector<RenderedObject>> objects = RenderManifests(r);
  ASSERT_TRUE(objects.ok());
  EXPECT_THAT((*objects)[0].yaml,
              HasSubstr("data:\n  secret: \"MDEyMzQ1Njc4OWFiY2RlZg==\"\n"));
  r.secret.clear();
  EXPECT_THAT((*RenderManifests(r))[0].yaml,
              HasSubstr("stringData:\n  secret: \"(generated"));
}

TEST(RenderManifests, TlsFilesBesideTheSecretAndServeReadsThem) {
  RenderRequest r = FullRequest(Flavour::kTfJob);
  r.secret = "0123456789abcdef";
  StatusOr<std::vector<RenderedObject>> objects = RenderManifests(r);
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_THAT((*objects)[0].yaml,
              HasSubstr("data:\n  secret: \"MDEyMzQ1Njc4OWFiY2RlZg==\"\n"
                        "  ca.pem: \"Y2EgY2VydAo=\"\n"));
  EXPECT_THAT((*objects)[0].yaml, Not(HasSubstr("stringData")));
  const std::string tls_args =
      "- \"--tls-dir\"\n            - \"/etc/dtf/secret\"\n            - "
      "\"--tls-task-names\"\n";
  EXPECT_THAT((*objects)[2].yaml, HasSubstr(tls_args));
  // Placeholders for a dry run.
  for (SecretFile& f : r.tls_files) f.contents.clear();
  r.secret.clear();
  objects = RenderManifests(r);
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_THAT((*objects)[0].yaml,
              HasSubstr("  worker-2.key: \"(generated when the run is "
                        "applied)\"\n"));
  EXPECT_THAT((*objects)[0].yaml, Not(HasSubstr("\ndata:")));
  // Off: the Secret holds the secret alone and serve gets no --tls-dir.
  r = FullRequest(Flavour::kJob);
  r.tls = false;
  const std::string off = JoinDocuments(*RenderManifests(r));
  EXPECT_THAT(off, Not(HasSubstr("--tls-")));
  EXPECT_THAT(off, Not(HasSubstr("ca.pem")));
  EXPECT_THAT(off, Not(HasSubstr("worker-0.key")));
  // Keys a Secret cannot hold, or the run's secret's own.
  for (const char* bad : {"secret", "a/b.pem", "", ".."}) {
    r = FullRequest(Flavour::kJob);
    r.tls_files.push_back({bad, "x"});
    EXPECT_EQ(RenderManifests(r).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  // More than a Secret may hold.
  r = FullRequest(Flavour::kJob);
  r.tls_files.push_back({"big.pem", std::string(1024 * 1024, 'x')});
  EXPECT_THAT(std::string(Message(RenderManifests(r).status())),
              HasSubstr("more than the 1048576 a Secret may"));
}

TEST(RenderManifests, S3CredentialsInTheSecretAndServeReadsThem) {
  for (Flavour flavour : {Flavour::kJob, Flavour::kTfJob}) {
    RenderRequest r = FullRequest(flavour);
    r.s3 = true;
    r.s3_credentials = "AWS_REGION=us-east-1\n";
    StatusOr<std::vector<RenderedObject>> objects = RenderManifests(r);
    ASSERT_TRUE(objects.ok()) << objects.status();
    EXPECT_THAT(
        (*objects)[0].yaml,
        HasSubstr("  s3-credentials: \"QVdTX1JFR0lPTj11cy1lYXN0LTEK\"\n"));
    const std::string all = JoinDocuments(*objects);
    const size_t flag = all.find("- \"--s3-credentials\"\n");
    ASSERT_NE(flag, std::string::npos);
    // The argument after it, whatever the flavour's indentation.
    const size_t next = all.find('\n', flag) + 1;
    std::string line = all.substr(next, all.find('\n', next) - next);
    line.erase(0, line.find_first_not_of(' '));
    EXPECT_EQ(line, "- \"/etc/dtf/secret/s3-credentials\"");
    EXPECT_THAT(all, Not(HasSubstr("AWS_REGION")));
    // A dry run: a placeholder.
    r.s3_credentials.clear();
    EXPECT_THAT((*RenderManifests(r))[0].yaml,
                HasSubstr("  s3-credentials: \"(generated when the run is "
                          "applied)\"\n"));
    // A TLS file cannot take its key.
    r.tls_files.push_back({"s3-credentials", "x"});
    EXPECT_EQ(RenderManifests(r).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  RenderRequest r = FullRequest(Flavour::kJob);
  EXPECT_THAT(JoinDocuments(*RenderManifests(r)),
              Not(HasSubstr("s3-credentials")));
}

TEST(RenderManifests, OneWorkerAndRefusals) {
  RenderRequest r = FullRequest(Flavour::kJob);
  r.workers = 1;
  EXPECT_THAT(JoinDocuments(*RenderManifests(r)),
              HasSubstr("- succeededIndexes: \"2\"\n"));
  r = FullRequest(Flavour::kTfJob);
  r.workers = 1;
  EXPECT_THAT(JoinDocuments(*RenderManifests(r)), Not(HasSubstr("Worker:")));
  r = FullRequest(Flavour::kJob);
  r.profile.ps.limits.cpu = "1";
  r.profile.where["kubernetes.ps.limits.cpu"] = "profiles/k8s.toml:9:3";
  EXPECT_THAT(std::string(Message(RenderManifests(r).status())),
              HasSubstr("profiles/k8s.toml:9:3: kubernetes.ps: flavour = "
                        "\"job\" runs every task from one pod template"));
  r = FullRequest(Flavour::kJob);
  r.workers = 0;
  EXPECT_FALSE(RenderManifests(r).ok());
  EXPECT_EQ(ObjectName("20261125-120000-ABCD"), "dtf-20261125-120000-abcd");
}

TEST(Kubectl, CommandLinesSelectTheRunByLabel) {
  KubernetesProfile p;
  p.ns = "ml";
  p.context = "prod";
  EXPECT_EQ(ShellJoin(ApplyCommand(p, "/tmp/r")),
            "kubectl --context=prod --namespace=ml apply --filename /tmp/r");
  EXPECT_EQ(ShellJoin(StatusCommand(p, "20261125-120000-abcd")),
            "kubectl --context=prod --namespace=ml get "
            "jobs.batch,services,configmaps,secrets,pods "
            "--selector=dtf.dev/run-id=20261125-120000-abcd --output=wide");
  EXPECT_EQ(ShellJoin(LogsCommand(p, "r1", true)),
            "kubectl --context=prod --namespace=ml logs --prefix "
            "--all-containers --max-log-requests=10000 --tail=-1 "
            "--selector=dtf.dev/run-id=r1 --follow");
  p.flavour = Flavour::kTfJob;
  p.context.clear();
  EXPECT_EQ(ShellJoin(DeleteCommand(p, "r1")),
            "kubectl --namespace=ml delete "
            "tfjobs.kubeflow.org,configmaps,secrets "
            "--selector=dtf.dev/run-id=r1 --ignore-not-found");
  EXPECT_EQ(ShellJoin({"a b", "it's"}), "'a b' 'it'\\''s'");
  p.flavour = Flavour::kJob;
  EXPECT_EQ(ShellJoin(ScaleJobCommand(p, "r1", 4)),
            "kubectl --namespace=ml patch job dtf-r1 --type=merge "
            "'--patch={\"spec\":{\"completions\":4,\"parallelism\":4}}'");
}

TEST(Kubectl, RunRecordRoundTrips) {
  KubernetesProfile p;
  p.ns = "ml";
  p.context = "prod";
  p.flavour = Flavour::kTfJob;
  RunRecordFacts written;
  written.training = true;
  written.output_kept = false;
  const std::string json = RunRecordJson("20261125-120000-abcd", p, written);
  EXPECT_EQ(json,
            "{\n  \"run_id\": \"20261125-120000-abcd\",\n  \"namespace\": "
            "\"ml\",\n  \"context\": \"prod\",\n  \"flavour\": \"tfjob\",\n"
            "  \"training\": true,\n  \"output_kept\": false\n}\n");
  std::string id;
  RunRecordFacts facts;
  StatusOr<KubernetesProfile> back =
      ParseRunRecord(json, "k.json", &id, &facts);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(facts.training, true);
  EXPECT_EQ(facts.output_kept, false);
  EXPECT_FALSE(facts.worker_slots.has_value());
  // A run with worker slots to start keeps their counts.
  written.ps = 1;
  written.worker_slots = 3;
  written.workers_started = 2;
  RunRecordFacts counts;
  std::string counted_id;
  ASSERT_TRUE(ParseRunRecord(RunRecordJson("r2", p, written), "k.json",
                             &counted_id, &counts)
                  .ok());
  EXPECT_EQ(counts.ps, 1);
  EXPECT_EQ(counts.worker_slots, 3);
  EXPECT_EQ(counts.workers_started, 2);
  // A record of a dtf before the facts were kept says nothing of them.
  std::string old_id;
  ASSERT_TRUE(ParseRunRecord("{\"run_id\": \"r\", \"namespace\": \"n\", "
                             "\"context\": \"\", \"flavour\": \"job\"}",
                             "k.json", &old_id, &facts)
                  .ok());
  EXPECT_FALSE(facts.training.has_value());
  EXPECT_FALSE(facts.output_kept.has_value());
  EXPECT_EQ(id, "20261125-120000-abcd");
  EXPECT_EQ(back->ns, "ml");
  EXPECT_EQ(back->context, "prod");
  EXPECT_EQ(back->flavour, Flavour::kTfJob);
  for (const char* bad : {"", "[]", "{\"run_id\": \"r\"}",
                          "{\"run_id\": \"r\", \"namespace\": \"n\", "
                          "\"context\": \"\", \"flavour\": \"mpi\"}"}) {
    EXPECT_EQ(ParseRunRecord(bad, "k.json", &id).status().code(),
              absl::StatusCode::kDataLoss)
        << bad;
  }
}

TEST(Kubectl, NoClusterIsAClearError) {
  if (RunCommand({"kubectl", "version", "--client"}).exit_code != 0) {
    GTEST_SKIP() << "kubectl not installed";
  }
  dtf::testing::TempDir dir("dtf_kubectl_test");
  ASSERT_TRUE(WriteFileAtomically(dir.Join("config"), "").ok());
  ::setenv("KUBECONFIG", dir.Join("config").c_str(), 1);
  KubernetesProfile p;
  Status s = CheckCluster(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("kubernetes: kubectl has no current context"));
  EXPECT_THAT(std::string(Message(s)), HasSubstr("--render DIR"));
  p.context = "prod";
  s = CheckCluster(p);
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("kubectl has no context \"prod\""));
  // A context whose cluster does not answer.
  ASSERT_TRUE(WriteFileAtomically(
                  dir.Join("config"),
                  "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
                  "clusters:\n- name: dead\n  cluster:\n    server: "
                  "https://127.0.0.1:9\ncontexts:\n- name: dead\n  context:\n"
                  "    cluster: dead\n    user: u\nusers:\n- name: u\n  "
                  "user: {}\n")
                  .ok());
  p.context.clear();
  s = CheckCluster(p);
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("the cluster of kubectl context \"dead\" cannot be "
                        "reached"));
  ::unsetenv("KUBECONFIG");
}

}  // namespace
}  // namespace dtf::launch::k8s
