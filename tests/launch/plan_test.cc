#include "lib/launch/plan.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan_hooks.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kProfile[] = R"(backend = "local"
ps = 1
workers = 2
host = "127.0.0.1"
base_port = 7000
threads = 4

[env]
OMP_NUM_THREADS = "1"
)";

PlanRequest FixedRequest() {
  PlanRequest r;
  r.job = "/jobs/census/dtf.toml";
  r.binary = "/opt/dtf/bin/dtf";
  r.profile =
      *ParseProfile(kProfile, "/jobs/census/profiles/local.toml", "local");
  r.overrides.sets = {"train.steps=100"};
  r.overrides.metrics_out = "/jobs/census/metrics.json";
  return r;
}

// The plan for FixedRequest(): the shape docs/launch.md documents.
constexpr char kGolden[] = R"({
  "version": 1,
  "run_id": "<run-id>",
  "job": "/jobs/census/dtf.toml",
  "binary": "/opt/dtf/bin/dtf",
  "run_dir": "/jobs/census/.dtf/runs/<run-id>",
  "secret_file": "/jobs/census/.dtf/runs/<run-id>/secret",
  "tls": false,
  "profile": {
    "name": "local",
    "source": "/jobs/census/profiles/local.toml",
    "backend": "local",
    "ps": 1,
    "workers": 2,
    "host": "127.0.0.1",
    "base_port": 7000,
    "threads": 4,
    "max_restarts": 0
  },
  "set": [
    "train.steps=100"
  ],
  "metrics_out": "/jobs/census/metrics.json",
  "cluster": {
    "ps": [
      "127.0.0.1:7000"
    ],
    "workers": [
      "127.0.0.1:7001",
      "127.0.0.1:7002"
    ]
  },
  "chief": "worker:0",
  "tasks": [
    {
      "task": "ps:0",
      "role": "ps",
      "index": 0,
      "chief": false,
      "host": "127.0.0.1",
      "port": 7000,
      "argv": [
        "/opt/dtf/bin/dtf",
        "serve",
        "--job",
        "/jobs/census/dtf.toml",
        "--role",
        "ps",
        "--index",
        "0",
        "--ps",
        "127.0.0.1:7000",
        "--workers",
        "127.0.0.1:7001,127.0.0.1:7002",
        "--run-id",
        "<run-id>",
        "--run-dir",
        "/jobs/census/.dtf/runs/<run-id>",
        "--secret-file",
        "/jobs/census/.dtf/runs/<run-id>/secret",
        "--ready-file",
        "/jobs/census/.dtf/runs/<run-id>/ps-0/ready",
        "--threads",
        "4",
        "--set",
        "train.steps=100"
      ],
      "env": {
        "OMP_NUM_THREADS": "1"
      },
      "dir": "/jobs/census/.dtf/runs/<run-id>/ps-0",
      "ready_file": "/jobs/census/.dtf/runs/<run-id>/ps-0/ready",
      "stdout": "/jobs/census/.dtf/runs/<run-id>/ps-0/stdout",
      "stderr": "/jobs/census/.dtf/runs/<run-id>/ps-0/stderr",
      "exit_file": "/jobs/census/.dtf/runs/<run-id>/ps-0/exit.json"
    },
    {
      "task": "worker:0",
      "role": "worker",
      "index": 0,
      "chief": true,
      "host": "127.0.0.1",
      "port": 7001,
      "argv": [
        "/opt/dtf/bin/dtf",
        "serve",
        "--job",
        "/jobs/census/dtf.toml",
        "--role",
        "worker",
        "--index",
        "0",
        "--ps",
        "127.0.0.1:7000",
        "--workers",
        "127.0.0.1:7001,127.0.0.1:7002",
        "--run-id",
        "<run-id>",
        "--run-dir",
        "/jobs/census/.dtf/runs/<run-id>",
        "--secret-file",
        "/jobs/census/.dtf/runs/<run-id>/secret",
        "--ready-file",
        "/jobs/census/.dtf/runs/<run-id>/worker-0/ready",
        "--threads",
        "4",
        "--set",
        "train.steps=100",
        "--metrics-out",
        "/jobs/census/metrics.json"
      ],
      "env": {
        "OMP_NUM_THREADS": "1"
      },
      "dir": "/jobs/census/.dtf/runs/<run-id>/worker-0",
      "ready_file": "/jobs/census/.dtf/runs/<run-id>/worker-0/ready",
      "stdout": "/jobs/census/.dtf/runs/<run-id>/worker-0/stdout",
      "stderr": "/jobs/census/.dtf/runs/<run-id>/worker-0/stderr",
      "exit_file": "/jobs/census/.dtf/runs/<run-id>/worker-0/exit.json"
    },
    {
      "task": "worker:1",
      "role": "worker",
      "index": 1,
      "chief": false,
      "host": "127.0.0.1",
      "port": 7002,
      "argv": [
        "/opt/dtf/bin/dtf",
        "serve",
        "--job",
        "/jobs/census/dtf.toml",
        "--role",
        "worker",
        "--index",
        "1",
        "--ps",
        "127.0.0.1:7000",
        "--workers",
        "127.0.0.1:7001,127.0.0.1:7002",
        "--run-id",
        "<run-id>",
        "--run-dir",
        "/jobs/census/.dtf/runs/<run-id>",
        "--secret-file",
        "/jobs/census/.dtf/runs/<run-id>/secret",
        "--ready-file",
        "/jobs/census/.dtf/runs/<run-id>/worker-1/ready",
        "--threads",
        "4",
        "--set",
        "train.steps=100"
      ],
      "env": {
        "OMP_NUM_THREADS": "1"
      },
      "dir": "/jobs/census/.dtf/runs/<run-id>/worker-1",
      "ready_file": "/jobs/census/.dtf/runs/<run-id>/worker-1/ready",
      "stdout": "/jobs/census/.dtf/runs/<run-id>/worker-1/stdout",
      "stderr": "/jobs/census/.dtf/runs/<run-id>/worker-1/stderr",
      "exit_file": "/jobs/census/.dtf/runs/<run-id>/worker-1/exit.json"
    }
  ]
}
)";

TEST(Plan, GoldenJson) {
  StatusOr<Plan> plan = MakePlan(FixedRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(PlanToJson(*plan), kGolden);
}

TEST(Plan, SameInputsSameBytes) {
  StatusOr<Plan> a = MakePlan(FixedRequest());
  StatusOr<Plan> b = MakePlan(FixedRequest());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(PlanToJson(*a), PlanToJson(*b));
  EXPECT_EQ(PlanToText(*a), PlanToText(*b));
}

TEST(Plan, JsonRoundTrips) {
  StatusOr<Plan> plan = MakePlan(FixedRequest());
  ASSERT_TRUE(plan.ok());
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), kGolden);
}

// plan.json and --json hold the plan's paths as JSON text: a job in a
// directory whose name is not UTF-8 is refused, naming the path, instead
// of the JSON writer throwing (which ended the process).
TEST(Plan, APathThatIsNotUtf8IsRefusedNamingIt) {
  PlanRequest r = FixedRequest();
  r.job = "/jobs/r\xE9sum\xE9/dtf.toml";
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
      << plan.status();
  EXPECT_NE(Message(plan.status())
                .find("the plan's /job: \"/jobs/r\\xe9sum\\xe9/dtf.toml\" "
                      "is not UTF-8 text"),
            std::string::npos)
      << plan.status();
}

// A restarted task restores the run's last checkpoint: restarts without
// periodic checkpoints are refused, naming the profile's key and the job's.
TEST(Plan, RestartsNeedPeriodicCheckpoints) {
  PlanRequest r = FixedRequest();
  r.profile.max_restarts = 2;
  r.profile.where["max_restarts"] = "/jobs/census/profiles/local.toml:4:1";
  r.job_checkpoint_every_steps = 0;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition)
      << plan.status();
  const std::string message(Message(plan.status()));
  EXPECT_NE(message.find("/jobs/census/profiles/local.toml:4:1: "
                         "max_restarts = 2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("/jobs/census/dtf.toml has "
                         "train.checkpoint_every_steps = 0"),
            std::string::npos)
      << message;
  r.job_checkpoint_every_steps = 100;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(PlanToText(*plan).find("restarts: up to 2"), std::string::npos);
}

// Elastic workers: min_workers above the run's workers, or in an
// allreduce run on a backend that cannot restart its workers at another
// size (Slurm), is refused naming the key; otherwise the plan says it and
// keeps it in plan.json, an allreduce run's on the local backend too.
TEST(Plan, MinWorkersIsCheckedAndKept) {
  PlanRequest r = FixedRequest();
  r.profile.min_workers = r.profile.workers + 1;
  r.profile.where["min_workers"] = "/jobs/census/profiles/local.toml:5:1";
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
      << plan.status();
  EXPECT_NE(Message(plan.status())
                .find("/jobs/census/profiles/local.toml:5:1: min_workers = "),
            std::string::npos)
      << plan.status();
  r.profile.min_workers = 1;
  r.allreduce = true;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->min_workers, 1);
  PlanRequest slurm = r;
  slurm.profile.backend = BackendKind::kSlurm;
  const Status refused =
      MakePlanWith(slurm, PlanHooksOf(BackendKind::kSlurm)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(Message(refused),
              HasSubstr("min_workers = 1: " + r.job +
                        " trains in allreduce mode, whose workers restart "
                        "together at another size where dtf launch stops and "
                        "starts them itself (backend = \"local\" or "
                        "\"ssh\"); this profile's backend is slurm"));
  r.allreduce = false;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->min_workers, 1);
  EXPECT_NE(PlanToText(*plan).find("elastic:"), std::string::npos);
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->min_workers, 1);
}

// dtf launch --resume: every task restores; the plan says so, in JSON too.
TEST(Plan, AResumedPlanRestoresEveryTask) {
  PlanRequest r = FixedRequest();
  r.resume = true;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(std::count(t.argv.begin(), t.argv.end(), "--restore"), 1)
        << t.name();
  }
  const std::string json = PlanToJson(*plan);
  EXPECT_NE(json.find("\"resume\": true"), std::string::npos);
  StatusOr<Plan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->resume);
  EXPECT_NE(PlanToText(*plan).find("resume:"), std::string::npos);
  // Not in a plan that is not resumed.
  StatusOr<Plan> fresh = MakePlan(FixedRequest());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(PlanToJson(*fresh).find("--restore"), std::string::npos);
}

// A task started again after it failed restores, whatever its role, and
// gets --restore once even in a resumed run.
TEST(Plan, ARestartedTaskOfAnyRoleRestores) {
  for (const bool resume : {false, true}) {
    PlanRequest r = FixedRequest();
    r.resume = resume;
    StatusOr<Plan> plan = MakePlan(r);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const TaskPlan& t : plan->tasks) {
      const std::vector<std::string> argv = RestartArgv(t);
      EXPECT_EQ(std::count(argv.begin(), argv.end(), "--restore"), 1)
          << t.name();
      std::vector<std::string> rest = argv;
      rest.erase(std::find(rest.begin(), rest.end(), "--restore"));
      std::vector<std::string> own = t.argv;
      own.erase(std::remove(own.begin(), own.end(), "--restore"), own.end());
      EXPECT_EQ(rest, own) << t.name();
    }
  }
}

// An SSH profile with a hostfile (tests/launch/testdata/cluster.hosts).
std::string SourcePath(std::string_view rel) {
  return StrCat(DTF_SOURCE_DIR, "/", rel);
}

PlanRequest SshRequest(int workers = 3) {
  PlanRequest r;
  r.job = "/jobs/census/dtf.toml";
  r.binary = "/opt/dtf/bin/dtf";
  StatusOr<Profile> profile = ParseProfile(
      StrCat("backend = \"ssh\"\nhostfile = \"",
             SourcePath("tests/launch/testdata/cluster.hosts"),
             "\"\nps = 2\nworkers = ", workers,
             "\nbase_port = 7000\nthreads = 2\n"
             "work_dir = \"/scratch/{host}/dtf\"\n\n[ssh]\nuser = \"ada\"\n"
             "identity_file = \"/home/ada/.ssh/id_ed25519\"\n"
             "known_hosts = \"/home/ada/.ssh/known_hosts\"\n"
             "connect_timeout = 5\n\n[env]\nOMP_NUM_THREADS = \"1\"\n"),
      "/jobs/census/profiles/cluster.toml", "cluster");
  EXPECT_TRUE(profile.ok()) << profile.status();
  r.profile = *profile;
  r.overrides.metrics_out = "/jobs/census/metrics.json";
  return r;
}

// The SSH plan's JSON, with this checkout's path shown as <src>.
std::string SshJson(const Plan& plan) {
  std::string json = PlanToJson(plan);
  const std::string src = DTF_SOURCE_DIR;
  for (size_t at; (at = json.find(src)) != std::string::npos;) {
    json.replace(at, src.size(), "<src>");
  }
  return json;
}

TEST(Plan, SshGoldenJson) {
  StatusOr<Plan> plan = MakePlan(SshRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(
      SshJson(*plan),
      testing::ReadFile(SourcePath("tests/launch/testdata/ssh_plan.json")));
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*plan));
}

TEST(Plan, SshPlacesTasksOnHosts) {
  StatusOr<Plan> plan = MakePlan(SshRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> hosts;
  for (const TaskPlan& t : plan->tasks) hosts.push_back(t.host);
  // Parameter servers only where ps is allowed; workers round-robin.
  EXPECT_THAT(hosts, ElementsAre("gpu-a", "gpu-a", "gpu-a", "gpu-b", "gpu-a"));
  const TaskPlan& w1 = *plan->Find("worker:1");
  EXPECT_EQ(w1.ssh_user, "train");
  EXPECT_EQ(w1.ssh_port, 2222);
  EXPECT_EQ(w1.work_dir, "/scratch/gpu-b/dtf");
  EXPECT_EQ(w1.dir, "/scratch/gpu-b/dtf/runs/<run-id>/worker-1");
  EXPECT_EQ(w1.argv[0], "/scratch/gpu-b/dtf/envs/<env-id>/bin/dtf");
  EXPECT_THAT(w1.argv,
              ::testing::Contains("/scratch/gpu-b/dtf/jobs/<job-id>/dtf.toml"));
  // Only the chief writes metrics, on its host.
  EXPECT_THAT(
      plan->chief().argv,
      ::testing::Contains("/scratch/gpu-a/dtf/runs/<run-id>/metrics.json"));
  EXPECT_THAT(w1.argv, ::testing::Not(::testing::Contains("--metrics-out")));
  // The text form says where each task's logs are.
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("gpu-b:/scratch/gpu-b/dtf/runs/<run-id>/worker-1/"));
}

TEST(Plan, TasksGetTheS3FileNeverItsValues) {
  PlanRequest r = FixedRequest();
  r.s3_credentials =
      "AWS_REGION=us-east-1\nAWS_ACCESS_KEY_ID=AKIDEXAMPLE\n"
      "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\n";
  r.s3_variables = {"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"};
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string file = "/jobs/census/.dtf/runs/<run-id>/s3-credentials";
  EXPECT_EQ(plan->s3_file, file);
  for (const TaskPlan& t : plan->tasks) {
    const auto it = std::find(t.argv.begin(), t.argv.end(),
                              std::string("--s3-credentials"));
    ASSERT_NE(it, t.argv.end()) << t.name();
    EXPECT_EQ(*(it + 1), file);
    for (const std::string& arg : t.argv) {
      EXPECT_THAT(arg, Not(HasSubstr("wJalrXUtnFEMI")));
      EXPECT_THAT(arg, Not(HasSubstr("AKIDEXAMPLE")));
    }
  }
  const std::string json = PlanToJson(*plan);
  const std::string text = PlanToText(*plan);
  EXPECT_THAT(json, HasSubstr("\"variables\": [\n      \"AWS_REGION\",\n"
                              "      \"AWS_ACCESS_KEY_ID\",\n"
                              "      \"AWS_SECRET_ACCESS_KEY\"\n    ]"));
  EXPECT_THAT(text, HasSubstr(StrCat("s3:       ", file,
                                     " (mode 0600): AWS_REGION, "
                                     "AWS_ACCESS_KEY_ID, "
                                     "AWS_SECRET_ACCESS_KEY\n")));
  for (const std::string& out : {json, text}) {
    EXPECT_THAT(out, Not(HasSubstr("wJalrXUtnFEMI")));
    EXPECT_THAT(out, Not(HasSubstr("AKIDEXAMPLE")));
  }
  StatusOr<Plan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->s3_file, file);
  EXPECT_EQ(back->s3_variables, r.s3_variables);
  EXPECT_EQ(PlanToJson(*back), json);
  // Without S3 settings, no file and no flag.
  plan = MakePlan(FixedRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->s3_file, "");
  EXPECT_THAT(plan->tasks[0].argv,
              Not(::testing::Contains("--s3-credentials")));
  EXPECT_THAT(PlanToJson(*plan), Not(HasSubstr("s3_credentials")));
}

TEST(Plan, SshTasksReadTheS3FileOnTheirHost) {
  PlanRequest r = SshRequest();
  r.s3_credentials = "AWS_REGION=us-east-1\n";
  r.s3_variables = {"AWS_REGION"};
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const TaskPlan& w1 = *plan->Find("worker:1");
  const auto it = std::find(w1.argv.begin(), w1.argv.end(),
                            std::string("--s3-credentials"));
  ASSERT_NE(it, w1.argv.end());
  EXPECT_EQ(*(it + 1), "/scratch/gpu-b/dtf/runs/<run-id>/s3-credentials");
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("s3-credentials (mode 0600; copied to each host's run "
                        "directory): AWS_REGION"));
}

TEST(Plan, SshNeedsSlotsForEveryWorker) {
  StatusOr<Plan> plan = MakePlan(SshRequest(/*workers=*/5));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(Message(plan.status()),
              HasSubstr("hostfile: 5 workers but the hosts have 4 slots"));
  PlanRequest r = SshRequest();
  for (HostEntry& h : r.profile.hosts) h.ps = false;
  plan = MakePlan(r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(Message(plan.status()), HasSubstr("every host has ps=false"));
}

// The CUDA_VISIBLE_DEVICES each task of `plan` gets ("-" for none).
std::vector<std::string> VisibleGpus(const Plan& plan) {
  std::vector<std::string> out;
  for (const TaskPlan& t : plan.tasks) {
    std::string gpu = "-";
    for (const auto& [name, value] : t.env) {
      if (name == "CUDA_VISIBLE_DEVICES") gpu = value;
    }
    out.push_back(gpu);
  }
  return out;
}

bool HasSet(const TaskPlan& t, std::string_view set) {
  for (size_t i = 0; i + 1 < t.argv.size(); ++i) {
    if (t.argv[i] == "--set" && t.argv[i + 1] == set) return true;
  }
  return false;
}

TEST(Plan, CudaWorkersGetAGpuEachAndPsStayOnTheCpu) {
  PlanRequest r = FixedRequest();
  r.overrides.workers = 3;
  r.profile.device = DeviceName{true, -1};
  r.profile.gpus = 2;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Three workers on two GPUs share them in turn (PS mode).
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("-", "0", "1", "0"));
  EXPECT_FALSE(HasSet(plan->tasks[0], "train.device=cuda"));
  EXPECT_TRUE(HasSet(plan->tasks[1], "train.device=cuda"));
  // The environment stays sorted by name.
  EXPECT_EQ(plan->tasks[1].env.front().first, "CUDA_VISIBLE_DEVICES");
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*plan));

  // "cuda:1" pins every worker to GPU 1; the job's device is used when the
  // profile names none.
  r.profile.device = DeviceName{true, 1};
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("-", "1", "1", "1"));
  r.profile.device.reset();
  r.profile.gpus = 0;  // not stated: worker i gets GPU i
  r.job_device = DeviceName{true, -1};
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("-", "0", "1", "2"));

  // A CPU profile for a CUDA job: the workers are told so.
  r.profile.device = DeviceName{};
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("-", "-", "-", "-"));
  EXPECT_TRUE(HasSet(plan->tasks[1], "train.device=cpu"));
}

TEST(Plan, AllreduceHasNoParameterServersAndAGpuPerWorker) {
  PlanRequest r = FixedRequest();
  r.allreduce = true;
  r.job_device = DeviceName{true, -1};
  r.profile.gpus = 2;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->ps, 0);
  EXPECT_EQ(plan->chief().name(), "worker:0");
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("0", "1"));
  EXPECT_TRUE(plan->allreduce());
  // Its plan.json reads back (dtf status, logs and stop read it).
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ps, 0);
  EXPECT_EQ(back->tasks.size(), 2u);
  EXPECT_TRUE(back->cuda_workers);
  // The dry run says so.
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("mode:     allreduce, no parameter servers: the "
                        "workers average their gradients over NCCL, a GPU "
                        "each\n"));
  EXPECT_THAT(PlanToJson(*plan), HasSubstr("\"collective\": \"nccl\""));
  r.overrides.workers = 3;
  plan = MakePlan(r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(
      Message(plan.status()),
      HasSubstr("allreduce needs a GPU per worker, and 127.0.0.1 has 2"));
}

// On CPUs: Gloo, which the dry run names; a PS plan says nothing of it.
TEST(Plan, AllreduceOnCpusIsGloo) {
  PlanRequest r = FixedRequest();
  r.allreduce = true;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->cuda_workers);
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("mode:     allreduce, no parameter servers: the "
                        "workers average their gradients over Gloo's TCP "
                        "ring, on CPUs\n"));
  EXPECT_THAT(PlanToJson(*plan), HasSubstr("\"collective\": \"gloo\""));
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->cuda_workers);

  r.allreduce = false;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(PlanToText(*plan), Not(HasSubstr("mode:")));
  EXPECT_THAT(PlanToJson(*plan), Not(HasSubstr("collective")));
}

TEST(Plan, SshCudaWorkersUseTheirHostsGpus) {
  PlanRequest r = SshRequest(/*workers=*/4);
  r.profile.device = DeviceName{true, -1};
  StatusOr<Plan> plan = MakePlan(r);
  // gpu-a says gpus=0: no GPU to give worker:0.
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(Message(plan.status()),
              HasSubstr("host gpu-a has no gpus= but the plan puts CUDA task "
                        "worker:0 there"));
  for (HostEntry& h : r.profile.hosts) h.gpus = 2;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Workers alternate between the hosts; each host numbers its own GPUs.
  EXPECT_THAT(VisibleGpus(*plan), ElementsAre("-", "-", "0", "0", "1", "1"));
}

TEST(Plan, CorruptJsonIsDataLoss) {
  StatusOr<Plan> bad = PlanFromJson("{\"version\": 1}", "x/plan.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(bad.status()), HasSubstr("x/plan.json"));
  EXPECT_FALSE(PlanFromJson("not json", "p").ok());
}

TEST(Plan, PortZeroMeansChosenAtLaunch) {
  PlanRequest r = FixedRequest();
  r.profile.base_port = 0;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok());
  for (const TaskPlan& t : plan->tasks) EXPECT_EQ(t.port, 0);
  EXPECT_THAT(PlanToJson(*plan), HasSubstr("\"127.0.0.1:0,127.0.0.1:0\""));
  EXPECT_THAT(PlanToText(*plan), HasSubstr("chosen at launch"));
}

TEST(Plan, ChosenPortsAndRunId) {
  PlanRequest r = FixedRequest();
  r.run_id = "20260101-120000-abcd";
  r.ports = {4000, 4100, 4200};
  r.runs_dir = "/var/runs";
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->run_dir, "/var/runs/20260101-120000-abcd");
  EXPECT_EQ(plan->tasks[2].address(), "127.0.0.1:4200");
  EXPECT_EQ(plan->chief().name(), "worker:0");
  EXPECT_EQ(plan->tasks[1].argv[11], "127.0.0.1:4100,127.0.0.1:4200");
  r.ports = {1, 2};
  EXPECT_FALSE(MakePlan(r).ok());
}

TEST(Plan, OverridesCounts) {
  PlanRequest r = FixedRequest();
  r.overrides.ps = 2;
  r.overrides.workers = 3;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> names;
  for (const TaskPlan& t : plan->tasks) names.push_back(t.name());
  EXPECT_THAT(names,
              ElementsAre("ps:0", "ps:1", "worker:0", "worker:1", "worker:2"));
  EXPECT_EQ(plan->tasks[4].port, 7004);
  // --metrics-out goes to the chief only.
  for (const TaskPlan& t : plan->tasks) {
    const bool has = std::find(t.argv.begin(), t.argv.end(), "--metrics-out") !=
                     t.argv.end();
    EXPECT_EQ(has, t.chief) << t.name();
  }
}

TEST(Plan, PortRangePast65535NamesTheProfileKey) {
  PlanRequest r = FixedRequest();
  r.profile = *ParseProfile("base_port = 65534\n", "p/local.toml", "local");
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(Message(plan.status()),
            "p/local.toml:1:13: base_port: 65534 + 3 tasks runs past port "
            "65535");
}

TEST(Plan, RelativePathsAreRefused) {
  PlanRequest r = FixedRequest();
  r.overrides.metrics_out = "metrics.json";
  EXPECT_THAT(Message(MakePlan(r).status()), HasSubstr("--metrics-out"));
  r = FixedRequest();
  r.job = "dtf.toml";
  EXPECT_FALSE(MakePlan(r).ok());
}

TEST(Plan, ValidateSet) {
  EXPECT_TRUE(ValidateSet("train.steps=100").ok());
  EXPECT_TRUE(ValidateSet("train.optimizer.learning_rate=0.1").ok());
  EXPECT_TRUE(ValidateSet("data.records=/a b/c=d").ok());
  EXPECT_THAT(Message(ValidateSet("steps=100")), HasSubstr("no section"));
  EXPECT_THAT(Message(ValidateSet("train.steps")), HasSubstr("no '='"));
  EXPECT_THAT(Message(ValidateSet("train.steps=")), HasSubstr("empty value"));
  EXPECT_THAT(Message(ValidateSet("train..steps=1")), HasSubstr("empty key"));
  EXPECT_THAT(Message(ValidateSet("train.st eps=1")),
              HasSubstr("' ' in the key"));
  PlanRequest r = FixedRequest();
  r.overrides.sets = {"bad"};
  EXPECT_EQ(MakePlan(r).status().code(), StatusCode::kInvalidArgument);
}

TEST(Plan, TextShowsTasksCommandsAndEnv) {
  StatusOr<Plan> plan = MakePlan(FixedRequest());
  ASSERT_TRUE(plan.ok());
  const std::string text = PlanToText(*plan);
  EXPECT_THAT(text, HasSubstr("worker:0  127.0.0.1:7001  chief"));
  EXPECT_THAT(text, HasSubstr("OMP_NUM_THREADS=1 \\\n"));
  EXPECT_THAT(text, HasSubstr("/opt/dtf/bin/dtf serve \\\n      --job "
                              "/jobs/census/dtf.toml"));
  EXPECT_THAT(text, HasSubstr("--run-id '<run-id>'"));
}

// The value after `flag` in `argv`, or "" when `flag` is not there.
std::string FlagValue(const std::vector<std::string>& argv,
                      std::string_view flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

// A run to real hosts has mutual TLS by default: every task gets --tls-dir,
// the tls/ directory of its run directory on its own host.
TEST(Plan, TlsIsOnWhenThePlanLeavesLoopback) {
  StatusOr<Plan> plan = MakePlan(SshRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->tls);
  EXPECT_TRUE(plan->LeavesLoopback());
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(FlagValue(t.argv, "--tls-dir"),
              StrCat("/scratch/", t.host, "/dtf/runs/<run-id>/tls"))
        << t.name();
  }
  EXPECT_EQ(PlaintextWarning(*plan, SshRequest().profile), "");
  const std::string text = PlanToText(*plan);
  EXPECT_THAT(text, HasSubstr("tls:      mutual TLS with the run's own CA: "
                              "/jobs/census/.dtf/runs/<run-id>/tls"));
  EXPECT_THAT(text, HasSubstr("each host gets the CA certificate"));
  EXPECT_THAT(text,
              HasSubstr("--tls-dir '/scratch/gpu-b/dtf/runs/<run-id>/tls'"));
}

// On loopback TLS is off unless the profile asks for it; asked, the tasks
// get the run directory's tls/ and the plan records it.
TEST(Plan, LoopbackRunsHaveTlsOnlyWhenAsked) {
  StatusOr<Plan> plan = MakePlan(FixedRequest());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
  EXPECT_FALSE(plan->LeavesLoopback());
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(FlagValue(t.argv, "--tls-dir"), "") << t.name();
  }
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("tls:      off (every task on loopback)"));
  EXPECT_EQ(PlaintextWarning(*plan, FixedRequest().profile), "");

  PlanRequest r = FixedRequest();
  r.profile.tls = true;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->tls);
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(FlagValue(t.argv, "--tls-dir"),
              "/jobs/census/.dtf/runs/<run-id>/tls")
        << t.name();
  }
  const std::string json = PlanToJson(*plan);
  EXPECT_THAT(json, HasSubstr("\"tls\": true"));
  StatusOr<Plan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->tls);
  EXPECT_EQ(PlanToJson(*back), json);
}

// A local run whose tasks bind a non-loopback address crosses the network.
TEST(Plan, LocalRunOnANetworkAddressHasTls) {
  PlanRequest r = FixedRequest();
  r.profile.host = "10.0.0.5";
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->tls);
  EXPECT_EQ(FlagValue(plan->tasks[0].argv, "--tls-dir"),
            "/jobs/census/.dtf/runs/<run-id>/tls");
  r.profile.host = "localhost";
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
}

// tls = false on a plan that leaves loopback is allowed, with a warning
// naming the profile's key.
TEST(Plan, TlsOffOverTheNetworkWarns) {
  PlanRequest r = SshRequest();
  r.profile.tls = false;
  r.profile.where["tls"] = "/jobs/census/profiles/cluster.toml:9:1";
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(FlagValue(t.argv, "--tls-dir"), "") << t.name();
  }
  EXPECT_EQ(PlaintextWarning(*plan, r.profile),
            "/jobs/census/profiles/cluster.toml:9:1: tls = false: the run's "
            "secret and every tensor cross the network in plaintext");
  EXPECT_THAT(PlanToText(*plan),
              HasSubstr("tls:      off (tls = false): the run's secret and "
                        "every tensor cross the network in plaintext"));
}

// plan.json written before runs had TLS: read as a run without it.
TEST(Plan, OldPlanJsonHasNoTls) {
  PlanRequest r = FixedRequest();
  r.profile.tls = true;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok());
  std::string json = PlanToJson(*plan);
  const std::string line = "  \"tls\": true,\n";
  const size_t at = json.find(line);
  ASSERT_NE(at, std::string::npos);
  json.erase(at, line.size());
  StatusOr<Plan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->tls);
}

TEST(Plan, ShellQuote) {
  EXPECT_EQ(ShellQuote("abc/d.toml"), "abc/d.toml");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace dtf::launch
