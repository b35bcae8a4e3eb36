// The objects of a dtf predict --profile run on Kubernetes
// (lib/launch/k8s/predict_manifests.h), and what the launcher reads back
// of its pods (kubectl.h: PodsCommand, ParsePods, ExecCommand).
#include "lib/launch/k8s/predict_manifests.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/manifest_parts.h"

namespace dtf::launch::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PredictRenderRequest Request() {
  PredictRenderRequest r;
  r.profile.ns = "ml";
  r.profile.image = "registry.example/dtf:1";
  r.profile.data.kind = DataVolume::Kind::kPvc;
  r.profile.data.source = "eval-data";
  r.profile.worker.limits.cpu = "2";
  r.profile.node_selector["pool"] = "cpu";
  r.run_id = "20261125-120000-abcd";
  r.shards = 3;
  r.max_restarts = 2;
  r.env["OMP_NUM_THREADS"] = "1";
  r.args = {"predict", "--model", kModelMountDir, "--input", "/data/e*"};
  return r;
}

std::string FileOf(const std::vector<RenderedObject>& objects,
                   const std::string& file) {
  for (const RenderedObject& o : objects) {
    if (o.file == file) return o.yaml;
  }
  return "";
}

TEST(RenderPredictManifests, ShippedModelIsAConfigMapMountedForThePods) {
  PredictRenderRequest r = Request();
  r.model_files["model.toml"] = "[model]\n";
  r.model_files["variables.dtf"] = std::string("\0\x01\xff", 3);
  StatusOr<std::vector<RenderedObject>> objects = RenderPredictManifests(r);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->size(), 2u);
  EXPECT_EQ((*objects)[0].kind, "ConfigMap");
  EXPECT_EQ((*objects)[0].name, "dtf-20261125-120000-abcd-model");
  const std::string config = FileOf(*objects, "configmap.yaml");
  EXPECT_THAT(config, HasSubstr("binaryData:\n  model.toml: \"" +
                                Base64("[model]\n") + "\"\n"));
  EXPECT_THAT(config, HasSubstr("  variables.dtf: \"AAH/\"\n"));
  const std::string job = FileOf(*objects, "job.yaml");
  for (const char* want :
       {"namespace: \"ml\"",
        "dtf.dev/run-id: \"20261125-120000-abcd\"",
        "completionMode: \"Indexed\"",
        "completions: 3\n",
        "parallelism: 3\n",
        "backoffLimitPerIndex: 2\n",
        "maxFailedIndexes: 0\n",
        "podReplacementPolicy: \"Failed\"",
        "restartPolicy: \"Never\"",
        "- name: \"predict\"\n",
        "image: \"registry.example/dtf:1\"",
        "- \"/usr/bin/dtf\"\n",
        "- \"/data/e*\"\n",
        "name: \"OMP_NUM_THREADS\"",
        "cpu: \"2\"",
        "pool: \"cpu\"",
        "mountPath: \"/work\"",
        "emptyDir: {}",
        "mountPath: \"/etc/dtf/model\"\n          readOnly: true",
        "name: \"dtf-20261125-120000-abcd-model\"",
        "claimName: \"eval-data\""}) {
    EXPECT_THAT(job, HasSubstr(want));
  }
  // No Secret and no Service: the pods do not talk to each other.
  EXPECT_THAT(job, Not(HasSubstr("secret")));
}

TEST(RenderPredictManifests, ModelOnTheDataVolumeIsNotShipped) {
  StatusOr<std::vector<RenderedObject>> objects =
      RenderPredictManifests(Request());
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_EQ(objects->size(), 1u);
  EXPECT_EQ((*objects)[0].file, "job.yaml");
  EXPECT_THAT((*objects)[0].yaml, Not(HasSubstr("dtf-model")));
  // The same request, the same bytes.
  EXPECT_EQ(RenderPredictManifests(Request())->at(0).yaml, (*objects)[0].yaml);
}

TEST(RenderPredictManifests, Refusals) {
  PredictRenderRequest r = Request();
  r.model_files["variables.dtf"] = std::string(kMaxShippedModelBytes + 1, 'v');
  StatusOr<std::vector<RenderedObject>> big = RenderPredictManifests(r);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(Message(big.status()),
              HasSubstr("put the model on the data volume (kubernetes.data, "
                        "mounted at /data) and pass --model as the pods see "
                        "it"));
  r = Request();
  r.model_files["a/b"] = "x";
  EXPECT_THAT(Message(RenderPredictManifests(r).status()),
              HasSubstr("\"a/b\" cannot be a key of a ConfigMap"));
  r = Request();
  r.shards = 0;
  EXPECT_THAT(Message(RenderPredictManifests(r).status()),
              HasSubstr("0 shards"));
  r = Request();
  r.run_id = std::string(70, 'a');
  EXPECT_THAT(Message(RenderPredictManifests(r).status()),
              HasSubstr("does not make a Kubernetes name"));
}

TEST(Kubectl, PredictCommandLines) {
  KubernetesProfile p;
  p.ns = "ml";
  EXPECT_EQ(ShellJoin(PodsCommand(p, "r1")),
            "kubectl --namespace=ml get pods --selector=dtf.dev/run-id=r1 "
            "--output=json");
  EXPECT_EQ(ShellJoin(PodLogsCommand(p, "dtf-r1-0-abcde", "predict", 1)),
            "kubectl --namespace=ml logs dtf-r1-0-abcde --container=predict "
            "--tail=1");
  EXPECT_EQ(ShellJoin(ExecCommand(
                p, "dtf-r1-0-abcde", "predict",
                {"/usr/bin/dtf", "task", "shard-fetch", "/work/predictions"})),
            "kubectl --namespace=ml exec dtf-r1-0-abcde --container=predict "
            "-- /usr/bin/dtf task shard-fetch /work/predictions");
}

TEST(Kubectl, ParsePodsReadsIndexPhaseAndWhyAPodWaits) {
  const std::string json = R"({"kind": "List", "items": [
    {"metadata": {"name": "dtf-r-0-aaaaa", "annotations":
       {"batch.kubernetes.io/job-completion-index": "0"}},
     "status": {"phase": "Running"}},
    {"metadata": {"name": "dtf-r-1-bbbbb", "annotations":
       {"batch.kubernetes.io/job-completion-index": "1"}},
     "status": {"phase": "Pending", "containerStatuses": [
       {"name": "predict", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}},
    {"metadata": {"name": "dtf-r-1-ccccc", "annotations":
       {"batch.kubernetes.io/job-completion-index": "1"}},
     "status": {"phase": "Failed", "reason": "Evicted"}},
    {"metadata": {"name": "dtf-r-2-ddddd", "annotations":
       {"batch.kubernetes.io/job-completion-index": "2"}},
     "status": {"phase": "Pending", "conditions": [
       {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu."}]}}]})";
  StatusOr<std::vector<PodState>> pods = ParsePods(json);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 4u);
  EXPECT_EQ((*pods)[0].name, "dtf-r-0-aaaaa");
  EXPECT_EQ((*pods)[0].index, 0);
  EXPECT_EQ((*pods)[0].phase, "Running");
  EXPECT_EQ((*pods)[1].index, 1);
  EXPECT_EQ((*pods)[1].reason, "ImagePullBackOff");
  EXPECT_EQ((*pods)[2].phase, "Failed");
  EXPECT_EQ((*pods)[2].reason, "Evicted");
  EXPECT_EQ((*pods)[3].reason, "Unschedulable");
  EXPECT_EQ((*pods)[3].message, "0/3 nodes are available: 3 Insufficient cpu.");
  EXPECT_TRUE(ParsePods(R"({"items": []})")->empty());
  for (const char* bad :
       {"error: the server doesn't have a resource type", "{\"items\": 3}",
        R"({"items": [{"metadata": {"name": "p"}, "status": {}}]})",
        R"({"items": [{"metadata": {"name": "p", "annotations":
           {"batch.kubernetes.io/job-completion-index": "-1"}}}]})"}) {
    StatusOr<std::vector<PodState>> b = ParsePods(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace dtf::launch::k8s
