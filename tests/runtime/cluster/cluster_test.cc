#include "lib/runtime/cluster/cluster.h"

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;

TaskAddress Addr(std::string host, int port) {
  return TaskAddress{std::move(host), port};
}

// The error message of a failed parse; fails the test if it succeeded.
template <typename T>
std::string ErrorOf(const StatusOr<T>& result) {
  EXPECT_FALSE(result.ok()) << "parsed, but should not have";
  if (result.ok()) return "";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(result.status()));
}

std::string ErrorOf(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return std::string(Message(status));
}

// ------------------------------------------------------------------ roles

TEST(ClusterSpec, RoleNamesRoundTrip) {
  for (Role role : {Role::kPs, Role::kWorker, Role::kChief, Role::kEvaluator}) {
    StatusOr<Role> parsed = ParseRole(RoleName(role));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, role);
  }
  EXPECT_EQ(RoleName(Role::kPs), "ps");
  EXPECT_EQ(RoleName(Role::kEvaluator), "evaluator");
  EXPECT_EQ(ErrorOf(ParseRole("master")),
            "task type \"master\" is not one of ps, worker, chief, evaluator");
  ErrorOf(ParseRole("Worker"));
  ErrorOf(ParseRole(""));
}

// -------------------------------------------------------------- addresses

TEST(ClusterSpec, ParsesAddresses) {
  struct Case {
    std::string_view text;
    TaskAddress want;
    std::string_view printed;
  };
  const Case cases[] = {
      {"localhost:2222", Addr("localhost", 2222), "localhost:2222"},
      {"10.0.0.7:1", Addr("10.0.0.7", 1), "10.0.0.7:1"},
      {"gpu-3.example.com:65535", Addr("gpu-3.example.com", 65535),
       "gpu-3.example.com:65535"},
      {"host_1:80", Addr("host_1", 80), "host_1:80"},
      {"[::1]:2222", Addr("::1", 2222), "[::1]:2222"},
      {"[2001:db8::7]:8470", Addr("2001:db8::7", 8470), "[2001:db8::7]:8470"},
      {"[::ffff:10.0.0.1]:9", Addr("::ffff:10.0.0.1", 9),
       "[::ffff:10.0.0.1]:9"},
      {"[fe80::1%eth0]:22", Addr("fe80::1%eth0", 22), "[fe80::1%eth0]:22"},
  };
  for (const Case& c : cases) {
    StatusOr<TaskAddress> a = ParseTaskAddress(c.text);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status();
    EXPECT_EQ(*a, c.want) << c.text;
    EXPECT_EQ(a->ToString(), c.printed);
    // ToString's text parses back to the same address.
    EXPECT_EQ(*ParseTaskAddress(a->ToString()), c.want);
  }
}

TEST(ClusterSpec, BadAddressesAreNamed) {
  struct Case {
    std::string_view text;
    std::string_view why;
  };
  const Case cases[] = {
      {"", "empty"},
      {"localhost", "expected host:port"},
      {":2222", "the host is empty"},
      {"localhost:", "port \"\" is not a number from 1 to 65535"},
      {"localhost:0", "port \"0\" is not a number from 1 to 65535"},
      {"localhost:65536", "port \"65536\" is not a number"},
      {"localhost:99999999999999999999", "is not a number"},
      {"localhost:-1", "port \"-1\""},
      {"localhost:+80", "port \"+80\""},
      {"localhost:80x", "port \"80x\""},
      {"localhost: 80", "port \" 80\""},
      {"::1:2222", "an IPv6 host goes in brackets"},
      {"[::1]", "expected ':port' after ']'"},
      {"[::1:2222", "no ']'"},
      {"[localhost]:80", "\"localhost\" in brackets is not an IPv6 address"},
      {"[]:80", "\"\" in brackets"},
      {"[fe80::1%]:80", "in brackets is not an IPv6 address"},
      {"bad host:80", "host \"bad host\" holds ' '"},
      {"a/b:80", "holds '/'"},
  };
  for (const Case& c : cases) {
    std::string error = ErrorOf(ParseTaskAddress(c.text));
    EXPECT_THAT(error, HasSubstr(StrCat("address \"", c.text, "\": ")))
        << c.text;
    EXPECT_THAT(error, HasSubstr(c.why)) << c.text;
  }
}

TEST(ClusterSpec, ParsesAddressLists) {
  StatusOr<std::vector<TaskAddress>> list =
      ParseAddressList("h1:2222, h2:2223 ,[::1]:2224");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, (std::vector<TaskAddress>{Addr("h1", 2222), Addr("h2", 2223),
                                             Addr("::1", 2224)}));
  EXPECT_EQ(*ParseAddressList("h:1"), std::vector<TaskAddress>{Addr("h", 1)});
  EXPECT_TRUE(ParseAddressList("")->empty());
  EXPECT_TRUE(ParseAddressList("  ")->empty());

  EXPECT_EQ(ErrorOf(ParseAddressList("h:1,,h:2")),
            "address list \"h:1,,h:2\": item 2 is empty");
  EXPECT_THAT(ErrorOf(ParseAddressList("h:1,")), HasSubstr("item 2 is empty"));
  EXPECT_EQ(ErrorOf(ParseAddressList("h:1,h")),
            "address list \"h:1,h\": address \"h\": expected host:port");
}

// ---------------------------------------------------------------- task ids

TEST(ClusterSpec, ParsesTaskIds) {
  EXPECT_EQ(*ParseTaskName("ps:0"), (TaskName{Role::kPs, 0}));
  EXPECT_EQ(*ParseTaskName("worker:3"), (TaskName{Role::kWorker, 3}));
  EXPECT_EQ(*ParseTaskName("chief:0"), (TaskName{Role::kChief, 0}));
  EXPECT_EQ(*ParseTaskName("evaluator:12"), (TaskName{Role::kEvaluator, 12}));
  EXPECT_EQ((TaskName{Role::kWorker, 1}).ToString(), "worker:1");
  EXPECT_EQ(TaskName{}.ToString(), "worker:0");
  for (std::string_view s : {"ps:0", "worker:17", "chief:0", "evaluator:2"}) {
    EXPECT_EQ(ParseTaskName(s)->ToString(), s);
  }
}

TEST(ClusterSpec, BadTaskIdsAreNamed) {
  EXPECT_EQ(ErrorOf(ParseTaskName("worker")),
            "task \"worker\": expected type:index, as \"worker:0\"");
  EXPECT_EQ(ErrorOf(ParseTaskName("master:0")),
            "task \"master:0\": type \"master\" is not one of ps, worker, "
            "chief, evaluator");
  EXPECT_EQ(ErrorOf(ParseTaskName("worker:x")),
            "task \"worker:x\": index \"x\" is not a non-negative integer");
  EXPECT_THAT(ErrorOf(ParseTaskName("worker:-1")), HasSubstr("index \"-1\""));
  EXPECT_THAT(ErrorOf(ParseTaskName("worker:")), HasSubstr("index \"\""));
  EXPECT_THAT(ErrorOf(ParseTaskName("worker:1:2")), HasSubstr("index \"1:2\""));
  EXPECT_THAT(ErrorOf(ParseTaskName("worker:99999999999")),
              HasSubstr("index \"99999999999\""));
}

// ---------------------------------------------------- the ClusterSpec itself

ClusterSpec Sample() {
  ClusterSpec c;
  c.ps = {Addr("ps0", 2222), Addr("ps1", 2222)};
  c.workers = {Addr("worker0", 2222), Addr("worker1", 2222)};
  c.chief = {Addr("chief0", 2222)};
  c.evaluators = {Addr("::1", 2300)};
  return c;
}

TEST(ClusterSpec, CoordinatorFindAndTrainers) {
  ClusterSpec c = Sample();
  EXPECT_EQ(c.coordinator(), (TaskName{Role::kChief, 0}));
  EXPECT_EQ(c.num_trainers(), 3);
  ASSERT_NE(c.Find({Role::kPs, 1}), nullptr);
  EXPECT_EQ(*c.Find({Role::kPs, 1}), Addr("ps1", 2222));
  EXPECT_EQ(*c.Find({Role::kEvaluator, 0}), Addr("::1", 2300));
  EXPECT_EQ(c.Find({Role::kPs, 2}), nullptr);
  EXPECT_EQ(c.Find({Role::kChief, 1}), nullptr);
  EXPECT_EQ(c.Find({Role::kWorker, -1}), nullptr);
  EXPECT_EQ(&c.tasks(Role::kWorker), &c.workers);

  c.chief.clear();
  EXPECT_EQ(c.coordinator(), (TaskName{Role::kWorker, 0}));
  EXPECT_EQ(c.num_trainers(), 2);
}

// ------------------------------------------------------ --cluster_spec

TEST(ClusterSpec, ParsesTensorFlowClusterSpecStrings) {
  // The form of TensorFlow's grpc_tensorflow_server --cluster_spec.
  StatusOr<ClusterSpec> c = ParseClusterSpecString(
      "ps|ps0:2222;ps1:2222,worker|worker0:2222;worker1:2222");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ps,
            (std::vector<TaskAddress>{Addr("ps0", 2222), Addr("ps1", 2222)}));
  EXPECT_EQ(c->workers, (std::vector<TaskAddress>{Addr("worker0", 2222),
                                                  Addr("worker1", 2222)}));
  EXPECT_TRUE(c->chief.empty());
  EXPECT_TRUE(c->evaluators.empty());

  c = ParseClusterSpecString(
      "worker|localhost:2223, chief|localhost:2222 ,ps| [::1]:2224 ");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->chief, std::vector<TaskAddress>{Addr("localhost", 2222)});
  EXPECT_EQ(c->workers, std::vector<TaskAddress>{Addr("localhost", 2223)});
  EXPECT_EQ(c->ps, std::vector<TaskAddress>{Addr("::1", 2224)});
}

TEST(ClusterSpec, ClusterSpecStringsRoundTrip) {
  const std::string text = ClusterSpecToString(Sample());
  EXPECT_EQ(text,
            "ps|ps0:2222;ps1:2222,worker|worker0:2222;worker1:2222,"
            "chief|chief0:2222,evaluator|[::1]:2300");
  StatusOr<ClusterSpec> back = ParseClusterSpecString(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Sample());

  ClusterSpec workers_only;
  workers_only.workers = {Addr("a", 1)};
  EXPECT_EQ(ClusterSpecToString(workers_only), "worker|a:1");
  EXPECT_EQ(*ParseClusterSpecString("worker|a:1"), workers_only);
  EXPECT_EQ(ClusterSpecToString(ClusterSpec{}), "");
}

TEST(ClusterSpec, BadClusterSpecStringsAreNamed) {
  EXPECT_THAT(ErrorOf(ParseClusterSpecString("")),
              HasSubstr("cluster spec is empty"));
  EXPECT_THAT(ErrorOf(ParseClusterSpecString(" ")),
              HasSubstr("cluster spec is empty"));
  EXPECT_EQ(ErrorOf(ParseClusterSpecString("worker:a:1")),
            "cluster spec \"worker:a:1\": job \"worker:a:1\" has no '|'; "
            "expected name|host:port;host:port");
  EXPECT_EQ(ErrorOf(ParseClusterSpecString("master|a:1")),
            "cluster spec \"master|a:1\": job name \"master\" is not one of "
            "ps, worker, chief, evaluator");
  EXPECT_EQ(ErrorOf(ParseClusterSpecString("worker|a:1,worker|b:1")),
            "cluster spec \"worker|a:1,worker|b:1\": job \"worker\" appears "
            "twice");
  EXPECT_EQ(ErrorOf(ParseClusterSpecString("worker|")),
            "cluster spec \"worker|\": job \"worker\" has an empty address");
  EXPECT_THAT(ErrorOf(ParseClusterSpecString("worker|a:1;;b:1")),
              HasSubstr("job \"worker\" has an empty address"));
  EXPECT_THAT(ErrorOf(ParseClusterSpecString("worker|a:1,")),
              HasSubstr("job \"\" has no '|'"));
  EXPECT_EQ(ErrorOf(ParseClusterSpecString("ps|a:1,worker|b:x")),
            "cluster spec \"ps|a:1,worker|b:x\": job \"worker\": address "
            "\"b:x\": port \"x\" is not a number from 1 to 65535");
}

// ------------------------------------------------------------- TF_CONFIG

TEST(ClusterSpec, ParsesTfConfigFromMultiWorkerMirroredStrategyDocs) {
  // tensorflow.org/tutorials/distribute/multi_worker_with_keras
  StatusOr<TfConfig> c = ParseTfConfig(R"({
      "cluster": {"worker": ["localhost:12345", "localhost:23456"]},
      "task": {"type": "worker", "index": 0}
  })");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cluster.workers,
            (std::vector<TaskAddress>{Addr("localhost", 12345),
                                      Addr("localhost", 23456)}));
  EXPECT_EQ(c->task, (TaskName{Role::kWorker, 0}));
  EXPECT_EQ(c->cluster.coordinator(), (TaskName{Role::kWorker, 0}));
  EXPECT_TRUE(ValidateCluster(c->cluster, c->task).ok());
}

TEST(ClusterSpec, ParsesTfConfigFromParameterServerDocs) {
  // tensorflow.org/tutorials/distribute/parameter_server_training, with
  // ports for the docs' "port".
  StatusOr<TfConfig> c = ParseTfConfig(R"({
      "cluster": {
          "worker": ["host1:2222", "host2:2222", "host3:2222"],
          "ps": ["host4:2222", "host5:2222"],
          "chief": ["host6:2222"]
      },
      "task": {"type": "worker", "index": 1}
  })");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cluster.workers.size(), 3u);
  EXPECT_EQ(c->cluster.ps, (std::vector<TaskAddress>{Addr("host4", 2222),
                                                     Addr("host5", 2222)}));
  EXPECT_EQ(c->cluster.chief, std::vector<TaskAddress>{Addr("host6", 2222)});
  EXPECT_EQ(c->task, (TaskName{Role::kWorker, 1}));
  EXPECT_EQ(*c->cluster.Find(c->task), Addr("host2", 2222));
  EXPECT_EQ(c->cluster.coordinator(), (TaskName{Role::kChief, 0}));
  EXPECT_EQ(c->cluster.num_trainers(), 4);
  EXPECT_TRUE(ValidateCluster(c->cluster, c->task).ok());
}

TEST(ClusterSpec, ParsesTfConfigOfAnEstimatorEvaluator) {
  // tf.estimator.RunConfig's docs: the evaluator is not part of the cluster.
  StatusOr<TfConfig> c = ParseTfConfig(R"({
      "cluster": {"chief": ["host0:2222"],
                  "ps": ["host1:2222", "host2:2222"],
                  "worker": ["host3:2222", "host4:2222", "host5:2222"]},
      "task": {"type": "evaluator", "index": 0}
  })");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task, (TaskName{Role::kEvaluator, 0}));
  EXPECT_TRUE(c->cluster.evaluators.empty());
  EXPECT_EQ(c->cluster.Find(c->task), nullptr);
  EXPECT_TRUE(ValidateCluster(c->cluster, c->task).ok());
  EXPECT_THAT(ErrorOf(ValidateCluster(c->cluster, {Role::kEvaluator, 1})),
              HasSubstr("must be evaluator:0"));
}

TEST(ClusterSpec, TfConfigIgnoresWhatTensorFlowIgnores) {
  // TFConfigClusterResolver's keys, a trial id, a missing index (0), an index
  // as a string and an empty job.
  StatusOr<TfConfig> c = ParseTfConfig(R"({
      "cluster": {"worker": ["a:1", "b:1"], "ps": [], "evaluator": ["e:1"]},
      "task": {"type": "ps", "trial": "7"},
      "rpc_layer": "grpc", "environment": "cloud"
  })");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task, (TaskName{Role::kPs, 0}));
  EXPECT_TRUE(c->cluster.ps.empty());
  EXPECT_EQ(c->cluster.evaluators, std::vector<TaskAddress>{Addr("e", 1)});

  c = ParseTfConfig(R"({"cluster": {"worker": ["a:1", "b:1"]},
                        "task": {"type": "worker", "index": "1"}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task, (TaskName{Role::kWorker, 1}));
}

TEST(ClusterSpec, TfConfigRoundTrips) {
  TfConfig config{Sample(), TaskName{Role::kPs, 1}};
  const std::string json = TfConfigToJson(config);
  EXPECT_EQ(json, R"({"cluster":{"chief":["chief0:2222"],)"
                  R"("worker":["worker0:2222","worker1:2222"],)"
                  R"("ps":["ps0:2222","ps1:2222"],"evaluator":["[::1]:2300"]},)"
                  R"("task":{"type":"ps","index":1}})");
  StatusOr<TfConfig> back = ParseTfConfig(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, config);

  TfConfig small;
  small.cluster.workers = {Addr("localhost", 12345)};
  EXPECT_EQ(TfConfigToJson(small),
            R"({"cluster":{"worker":["localhost:12345"]},)"
            R"("task":{"type":"worker","index":0}})");
  EXPECT_EQ(*ParseTfConfig(TfConfigToJson(small)), small);
}

TEST(ClusterSpec, BadTfConfigsAreNamed) {
  struct Case {
    std::string_view json;
    std::string_view error;
  };
  const Case cases[] = {
      {"", "TF_CONFIG: empty; expected a JSON object"},
      {"{", "TF_CONFIG: not valid JSON: parse error at line 1, column 2"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}} x)",
       "TF_CONFIG: not valid JSON: "},
      {"[1]", "TF_CONFIG: expected a JSON object, got array"},
      {R"({"task": {"type": "worker"}})", "TF_CONFIG: no \"cluster\""},
      {R"({"cluster": ["a:1"], "task": {"type": "worker"}})",
       "TF_CONFIG: \"cluster\" must be an object of job names to address "
       "lists, got array"},
      {R"({"cluster": {"master": ["a:1"]}, "task": {"type": "worker"}})",
       "TF_CONFIG: cluster job \"master\" is not one of ps, worker, chief, "
       "evaluator"},
      {R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker"}})",
       "TF_CONFIG: cluster.worker must be a list of \"host:port\" strings, "
       "got string"},
      {R"({"cluster": {"worker": {"0": "a:1"}}, "task": {"type": "worker"}})",
       "got object"},
      {R"({"cluster": {"worker": ["a:1", 2]}, "task": {"type": "worker"}})",
       "TF_CONFIG: cluster.worker[1] must be a \"host:port\" string, got "
       "number"},
      {R"({"cluster": {"ps": ["a:1", "b"]}, "task": {"type": "worker"}})",
       "TF_CONFIG: cluster.ps[1]: address \"b\": expected host:port"},
      {R"({"cluster": {"worker": ["a:1"]}})", "TF_CONFIG: no \"task\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": "worker"})",
       "TF_CONFIG: \"task\" must be an object, got string"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})",
       "TF_CONFIG: task.type is missing"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": 1}})",
       "TF_CONFIG: task.type must be a string, got number"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "foo"}})",
       "TF_CONFIG: task.type \"foo\" is not one of ps, worker, chief, "
       "evaluator"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": -1}})",
       "TF_CONFIG: task.index -1 is negative"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": 1.5}})",
       "TF_CONFIG: task.index must be an integer, got 1.5"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": null}})",
       "TF_CONFIG: task.index must be an integer, got null"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": "one"}})",
       "TF_CONFIG: task.index \"one\" is not a non-negative integer"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": 3000000000}})",
       "TF_CONFIG: task.index 3000000000 is too large"},
      {R"({"cluster": {"worker": ["a:1"]},
           "task": {"type": "worker", "index": 18446744073709551615}})",
       "TF_CONFIG: task.index 18446744073709551615 is too large"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ErrorOf(ParseTfConfig(c.json)), HasSubstr(c.error)) << c.json;
  }
}

// ------------------------------------------------------------ validation

TEST(ClusterSpec, ValidClustersPass) {
  const ClusterSpec c = Sample();
  for (TaskName id : {TaskName{Role::kPs, 0}, TaskName{Role::kPs, 1},
                      TaskName{Role::kWorker, 1}, TaskName{Role::kChief, 0},
                      TaskName{Role::kEvaluator, 0}}) {
    EXPECT_TRUE(ValidateCluster(c, id).ok()) << id.ToString();
  }
  ClusterSpec chief_only;
  chief_only.chief = {Addr("localhost", 2222)};
  EXPECT_TRUE(ValidateCluster(chief_only, {Role::kChief, 0}).ok());
  // The same host on different ports is fine.
  ClusterSpec one_host;
  one_host.workers = {Addr("localhost", 2222), Addr("localhost", 2223)};
  one_host.ps = {Addr("localhost", 2224)};
  EXPECT_TRUE(ValidateCluster(one_host, {Role::kWorker, 1}).ok());
}

TEST(ClusterSpec, ClusterWithoutTrainersIsInvalid) {
  ClusterSpec c;
  c.ps = {Addr("ps0", 1)};
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kPs, 0})),
            "cluster \"ps|ps0:1\" has no worker or chief task");
  EXPECT_THAT(ErrorOf(ValidateCluster(ClusterSpec{}, TaskName{})),
              HasSubstr("has no worker or chief task"));
}

TEST(ClusterSpec, TwoChiefsAreInvalid) {
  ClusterSpec c = Sample();
  c.chief.push_back(Addr("chief1", 2222));
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kChief, 0})),
            "cluster lists 2 chief tasks (chief0:2222, chief1:2222); at most "
            "one is allowed");
}

TEST(ClusterSpec, AnAddressUsedTwiceIsInvalid) {
  ClusterSpec c = Sample();
  c.workers[1] = Addr("PS1", 2222);
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kWorker, 0})),
            "address PS1:2222 is used by both ps:1 and worker:1");
  c = Sample();
  c.evaluators.push_back(Addr("::1", 2300));
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kWorker, 0})),
            "address [::1]:2300 is used by both evaluator:0 and evaluator:1");
}

TEST(ClusterSpec, MalformedAddressesAreInvalid) {
  ClusterSpec c = Sample();
  c.workers[0].host = "";
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kChief, 0})),
            "task worker:0 has an empty host");
  c = Sample();
  c.ps[1].port = 70000;
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kChief, 0})),
            "task ps:1 (ps1:70000): port 70000 is not from 1 to 65535");
}

TEST(ClusterSpec, TaskOutsideTheClusterIsInvalid) {
  const ClusterSpec c = Sample();
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kWorker, 2})),
            "task worker:2 is not in the cluster, which has 2 worker tasks "
            "(worker:0 to worker:1)");
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kChief, 1})),
            "task chief:1 is not in the cluster, which has 1 chief task "
            "(chief:0)");
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kEvaluator, 1})),
            "task evaluator:1 is not in the cluster, which has 1 evaluator "
            "task (evaluator:0)");
  EXPECT_EQ(ErrorOf(ValidateCluster(c, {Role::kWorker, -1})),
            "task worker:-1 has a negative index");
  ClusterSpec no_ps;
  no_ps.workers = {Addr("a", 1)};
  EXPECT_EQ(ErrorOf(ValidateCluster(no_ps, {Role::kPs, 0})),
            "task ps:0 is not in the cluster, which has no ps task");
  // Through TF_CONFIG, as a task started with the wrong index would see it.
  StatusOr<TfConfig> tf = ParseTfConfig(
      R"({"cluster": {"worker": ["a:1", "b:1"]},
          "task": {"type": "worker", "index": 2}})");
  ASSERT_TRUE(tf.ok()) << tf.status();
  EXPECT_THAT(ErrorOf(ValidateCluster(tf->cluster, tf->task)),
              HasSubstr("task worker:2 is not in the cluster"));
}

}  // namespace
}  // namespace dtf::runtime
