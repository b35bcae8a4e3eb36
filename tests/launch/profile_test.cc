#include "lib/launch/profile.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  StatusOr<Profile> p = ParseProfile(text, "profiles/x.toml", "x");
  EXPECT_FALSE(p.ok()) << text;
  return p.ok() ? "" : std::string(Message(p.status()));
}

TEST(Profile, DefaultsWhenEmpty) {
  StatusOr<Profile> p = ParseProfile("", "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->backend, BackendKind::kLocal);
  EXPECT_EQ(p->ps, 1);
  EXPECT_EQ(p->workers, 2);
  EXPECT_EQ(p->host, "127.0.0.1");
  EXPECT_EQ(p->base_port, 0);
  EXPECT_EQ(p->threads, 0);
  EXPECT_EQ(p->max_restarts, 0);
  EXPECT_TRUE(p->env.empty());
}

TEST(Profile, ReadsEveryKey) {
  StatusOr<Profile> p = ParseProfile(R"(backend = "local"
ps = 2
workers = 4
host = "localhost"
base_port = 7000
threads = 3
max_restarts = 2
device = "cuda"
gpus = 4

[env]
OMP_NUM_THREADS = "1"
TF_CPP_MIN_LOG_LEVEL = "2"
)",
                                     "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ps, 2);
  EXPECT_EQ(p->workers, 4);
  EXPECT_EQ(p->host, "localhost");
  EXPECT_EQ(p->base_port, 7000);
  EXPECT_EQ(p->threads, 3);
  EXPECT_EQ(p->max_restarts, 2);
  EXPECT_EQ(p->device, (DeviceName{true, -1}));
  EXPECT_EQ(p->gpus, 4);
  ASSERT_EQ(p->env.size(), 2u);
  EXPECT_EQ(p->env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(p->where.at("base_port"), "p.toml:5:13");
}

TEST(Profile, EmbeddedDefaultIsTheShippedFile) {
  const std::string shipped = dtf::testing::ReadFile(
      std::string(DTF_SOURCE_DIR) + "/profiles/local.toml");
  EXPECT_EQ(shipped, kDefaultLocalProfile);
  StatusOr<Profile> p =
      ParseProfile(kDefaultLocalProfile, kBuiltInProfileSource, "local");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ps, 1);
  EXPECT_EQ(p->workers, 2);
}

TEST(Profile, UnknownKeyNamesFileLineAndSuggests) {
  EXPECT_EQ(ErrorOf("ps = 1\nworker = 2\n"),
            "profiles/x.toml:2:1: worker: unknown key (did you mean "
            "workers?)");
  EXPECT_THAT(ErrorOf("zzz = 1\n"), HasSubstr("expected one of backend, ps"));
}

TEST(Profile, BadValuesNameFileLineAndKey) {
  EXPECT_EQ(ErrorOf("ps = 0\n"),
            "profiles/x.toml:1:6: ps: must be at least 1, got 0");
  EXPECT_EQ(ErrorOf("\nworkers = \"two\"\n"),
            "profiles/x.toml:2:11: workers: expected an integer, got \"two\"");
  EXPECT_EQ(ErrorOf("base_port = 70000\n"),
            "profiles/x.toml:1:13: base_port: must be at most 65535, got "
            "70000");
  EXPECT_EQ(ErrorOf("threads = -1\n"),
            "profiles/x.toml:1:11: threads: must be at least 0, got -1");
  EXPECT_EQ(ErrorOf("host = \"\"\n"),
            "profiles/x.toml:1:8: host: must not be empty");
  EXPECT_THAT(ErrorOf("host = \"a b\"\n"),
              HasSubstr("profiles/x.toml:1:8: host: expected a host name"));
  EXPECT_EQ(ErrorOf("[env]\nA = 1\n"),
            "profiles/x.toml:2:5: env.A: expected a string, got an integer");
  EXPECT_THAT(ErrorOf("[env]\n\"1X\" = \"a\"\n"),
              HasSubstr("profiles/x.toml:2:1: env.1X: not a variable"));
  EXPECT_EQ(ErrorOf("device = \"tpu\"\n"),
            "profiles/x.toml:1:10: device: \"tpu\" is not a device; expected "
            "\"cpu\", \"cuda\" or \"cuda:N\" (N from 0)");
  EXPECT_EQ(ErrorOf("gpus = -2\n"),
            "profiles/x.toml:1:8: gpus: must be at least 0, got -2");
  EXPECT_EQ(ErrorOf("env = 3\n"),
            "profiles/x.toml:1:7: env: expected a table of strings, got an "
            "integer");
}

// tls: unset by default (the plan decides), else as written, for either
// backend.
TEST(Profile, TlsKey) {
  StatusOr<Profile> p = ParseProfile("", "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->tls, std::nullopt);
  p = ParseProfile("ps = 1\ntls = true\n", "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->tls, true);
  EXPECT_EQ(p->where.at("tls"), "p.toml:2:7");
  p = ParseProfile("backend = \"ssh\"\nhosts = [\"a\"]\ntls = false\n",
                   "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->tls, false);
  EXPECT_THAT(ErrorOf("tls = \"yes\"\n"),
              HasSubstr("profiles/x.toml:1:7: tls: expected true or false"));
  EXPECT_THAT(ErrorOf("tlss = true\n"), HasSubstr("did you mean tls?"));
}

TEST(Profile, KubernetesNeedsItsTable) {
  EXPECT_EQ(ErrorOf("backend = \"kubernetes\"\n"),
            "profiles/x.toml:1:11: kubernetes: backend = \"kubernetes\" "
            "needs a [kubernetes] table with at least image = \"...\"");
  // "k8s" is its other name.
  EXPECT_THAT(ErrorOf("backend = \"k8s\"\n"),
              HasSubstr("needs a [kubernetes] table"));
  EXPECT_THAT(ErrorOf("backend = \"locl\"\n"),
              HasSubstr("backend: unknown value \"locl\" (did you mean "
                        "local?)"));
}

TEST(Profile, SshReadsEveryKey) {
  StatusOr<Profile> p = ParseProfile(R"(backend = "ssh"
hosts = ["h1 slots=2", "h2:3 ps=false user=bob port=2200"]
ps = 2
workers = 5
work_dir = "/scratch/{host}/dtf/"
with_data = true
base_port = 7000
max_restarts = 2
[ssh]
user = "ada"
port = 2222
identity_file = "keys/id_ed25519"
known_hosts = "/etc/dtf/known_hosts"
config = "none"
connect_timeout = 3
keepalive = 0
reconnect_timeout = 5
)",
                                     "/jobs/a/profiles/c.toml", "c");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->backend, BackendKind::kSsh);
  ASSERT_EQ(p->hosts.size(), 2u);
  EXPECT_EQ(p->hosts[0].host, "h1");
  EXPECT_EQ(p->hosts[0].slots, 2);
  EXPECT_EQ(p->hosts[1].slots, 3);
  EXPECT_FALSE(p->hosts[1].ps);
  EXPECT_EQ(p->hosts[1].user, "bob");
  EXPECT_EQ(p->hosts[1].port, 2200);
  EXPECT_EQ(p->work_dir, "/scratch/{host}/dtf");
  EXPECT_TRUE(p->with_data);
  EXPECT_EQ(p->ssh.user, "ada");
  EXPECT_EQ(p->ssh.port, 2222);
  // Relative to the profile's directory.
  EXPECT_EQ(p->ssh.identity_file, "/jobs/a/profiles/keys/id_ed25519");
  EXPECT_EQ(p->ssh.known_hosts, "/etc/dtf/known_hosts");
  EXPECT_EQ(p->ssh.config, "none");
  EXPECT_EQ(p->ssh.connect_timeout, 3);
  EXPECT_EQ(p->ssh.keepalive, 0);
  EXPECT_EQ(p->ssh.reconnect_timeout, 5);
  EXPECT_EQ(p->max_restarts, 2);
  EXPECT_EQ(ExpandWorkDir(p->work_dir, "h2"), "/scratch/h2/dtf");
}

TEST(Profile, SshReconnectsForHalfAMinuteByDefault) {
  StatusOr<Profile> p = ParseProfile("backend = \"ssh\"\nhosts = [\"h1\"]\n",
                                     "/jobs/a/profiles/c.toml", "c");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ssh.reconnect_timeout, 30);
}

TEST(Profile, TildeIsTheHomeDirectoryTheCallerGives) {
  const char kText[] = R"(backend = "ssh"
hosts = ["h1"]
[ssh]
identity_file = "~/.ssh/id_dtf"
known_hosts = "~"
config = "~user/config"
)";
  StatusOr<Profile> p = ParseProfile(kText, "/jobs/a/profiles/c.toml", "c",
                                     ProfileOptions{.home_dir = "/home/ada"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ssh.identity_file, "/home/ada/.ssh/id_dtf");
  EXPECT_EQ(p->ssh.known_hosts, "/home/ada");
  // Only "~" and "~/": "~user" is a relative path.
  EXPECT_EQ(p->ssh.config, "/jobs/a/profiles/~user/config");

  // No home directory (HOME unset): "~/x" reads as "/x".
  p = ParseProfile(kText, "/jobs/a/profiles/c.toml", "c");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ssh.identity_file, "/.ssh/id_dtf");
}

TEST(Profile, AnEndlessProfileFileIsRefusedAtTheLimit) {
  StatusOr<Profile> p = LoadProfileFile("/dev/zero");
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument)
      << p.status();
  EXPECT_THAT(Message(p.status()), HasSubstr("/dev/zero: larger than 4194304"));
}

TEST(Profile, SshReadsAHostfileBesideIt) {
  testing::TempDir dir;
  { std::ofstream(dir.Join("hosts")) << "# cluster\nnode1 slots=4 gpus=2\n"; }
  const std::string path = dir.Join("p.toml");
  { std::ofstream(path) << "backend = \"ssh\"\nhostfile = \"hosts\"\n"; }
  StatusOr<Profile> p = LoadProfileFile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->hostfile, dir.Join("hosts"));
  ASSERT_EQ(p->hosts.size(), 1u);
  EXPECT_EQ(p->hosts[0].gpus, 2);
  EXPECT_EQ(p->work_dir, ".dtf");

  // An error in the hostfile names the profile key and the hostfile line.
  { std::ofstream(dir.Join("hosts")) << "node1\nnode2 slot=3\n"; }
  p = LoadProfileFile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(Message(p.status()), HasSubstr(path + ":2:12: hostfile: "));
  EXPECT_THAT(Message(p.status()), HasSubstr(dir.Join("hosts") + ":2:7: "));
  EXPECT_THAT(Message(p.status()), HasSubstr("unknown key \"slot\""));
}

TEST(Profile, SshErrorsNameTheKey) {
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\n"),
            "profiles/x.toml: backend = \"ssh\" needs hosts = [\"h1\", ...] "
            "or hostfile = \"PATH\"");
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = [\"a\"]\nhostfile = \"h\"\n"),
            "profiles/x.toml:3:12: hostfile: give hosts or hostfile, not both");
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = []\n"),
            "profiles/x.toml:2:9: hosts: expected a non-empty array of "
            "strings, got an array");
  // The element at fault, with the hostfile parser's reason.
  EXPECT_THAT(ErrorOf("backend = \"ssh\"\nhosts = [\"a\", \"b gpus=x\"]\n"),
              HasSubstr("profiles/x.toml:2:15: hosts[1]: gpus: expected an "
                        "integer"));
  EXPECT_THAT(ErrorOf("backend = \"ssh\"\nhosts = [\"a\", \"a\"]\n"),
              HasSubstr("hosts[1]: host a is already listed"));
  // Keys of the other backend are named as such.
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = [\"a\"]\nhost = \"b\"\n"),
            "profiles/x.toml:3:1: host: only for backend = \"local\"");
  EXPECT_EQ(ErrorOf("hosts = [\"a\"]\n"),
            "profiles/x.toml:1:1: hosts: only for backend = \"ssh\"");
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = [\"a\"]\n[ssh]\nprot = 2\n"),
            "profiles/x.toml:4:1: ssh.prot: unknown key (did you mean port?)");
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = [\"a\"]\n[ssh]\nport = 0\n"),
            "profiles/x.toml:4:8: ssh.port: must be at least 1, got 0");
  EXPECT_EQ(ErrorOf("backend = \"ssh\"\nhosts = [\"a\"]\n[ssh]\n"
                    "reconnect_timeout = 3601\n"),
            "profiles/x.toml:4:21: ssh.reconnect_timeout: must be at most "
            "3600, got 3601");
}

TEST(Profile, SyntaxErrorNamesFileAndLine) {
  EXPECT_THAT(ErrorOf("ps = 1\nworkers = \n"), HasSubstr("profiles/x.toml:2:"));
}

TEST(Profile, ResolveByNameFallsBackToTheBuiltInLocal) {
  dtf::testing::TempDir dir;
  StatusOr<Profile> p = ResolveProfile(dir.path(), "local");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->source, kBuiltInProfileSource);
  EXPECT_EQ(p->name, "local");

  StatusOr<Profile> missing = ResolveProfile(dir.path(), "prod");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()), HasSubstr("profiles/prod.toml"));
}

TEST(Profile, ResolveByNameAndByPath) {
  dtf::testing::TempDir dir;
  std::filesystem::create_directories(dir.Join("profiles"));
  dtf::testing::WriteFile(dir.Join("profiles/local.toml"), "workers = 5\n");
  dtf::testing::WriteFile(dir.Join("other.toml"), "ps = 3\n");
  StatusOr<Profile> local = ResolveProfile(dir.path(), "local");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->workers, 5);
  EXPECT_EQ(local->source, dir.Join("profiles/local.toml"));

  StatusOr<Profile> path = ResolveProfile(dir.path(), dir.Join("other.toml"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->ps, 3);
  EXPECT_EQ(path->name, "other");

  dtf::testing::WriteFile(dir.Join("profiles/bad.toml"), "ps = -2\n");
  StatusOr<Profile> bad = ResolveProfile(dir.path(), "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(Message(bad.status()), dir.Join("profiles/bad.toml") +
                                       ":1:6: ps: must be at least 1, "
                                       "got -2");
}

TEST(Profile, ReadsTheS3TableOnEveryBackend) {
  StatusOr<Profile> p = ParseProfile("", "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->s3.present);
  EXPECT_TRUE(p->s3.pass_credentials);
  p = ParseProfile(R"(backend = "local"
[s3]
endpoint = "http://minio.internal:9000"
region = "eu-west-1"
profile = "training"
path_style = false
credentials = "tasks"
)",
                   "p.toml", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->s3.present);
  EXPECT_EQ(p->s3.endpoint, "http://minio.internal:9000");
  EXPECT_EQ(p->s3.region, "eu-west-1");
  EXPECT_EQ(p->s3.profile, "training");
  EXPECT_EQ(p->s3.path_style, false);
  EXPECT_FALSE(p->s3.pass_credentials);
  EXPECT_EQ(KeyWhere(*p, "s3.profile"), "p.toml:5:11");
  for (const char* backend :
       {"backend = \"ssh\"\nhosts = [\"h1\"]\n",
        "backend = \"slurm\"\n[slurm]\npartition = \"cpu\"\n",
        "backend = \"kubernetes\"\n[kubernetes]\nimage = \"dtf:1\"\n"}) {
    p = ParseProfile(StrCat(backend, "[s3]\nregion = \"us-west-2\"\n"),
                     "p.toml", "p");
    ASSERT_TRUE(p.ok()) << backend << ": " << p.status();
    EXPECT_EQ(p->s3.region, "us-west-2") << backend;
  }
}

TEST(Profile, S3TableErrorsNameTheKey) {
  EXPECT_THAT(ErrorOf("[s3]\nendpoint = \"minio:9000\"\n"),
              HasSubstr("profiles/x.toml:2:12: s3.endpoint: expected an "
                        "http:// or https:// URL, got \"minio:9000\""));
  EXPECT_THAT(ErrorOf("[s3]\nregoin = \"eu-west-1\"\n"),
              HasSubstr("s3.regoin: unknown key (did you mean region?)"));
  EXPECT_THAT(ErrorOf("[s3]\ncredentials = \"env\"\n"),
              HasSubstr("s3.credentials"));
  EXPECT_THAT(ErrorOf("[s3]\nregion = \"\"\n"),
              HasSubstr("s3.region: must not be empty"));
  EXPECT_THAT(ErrorOf("[s3]\nprofile = \"a b\"\n"),
              HasSubstr("s3.profile: must not hold spaces"));
  EXPECT_THAT(ErrorOf("[s3]\npath_style = \"yes\"\n"),
              HasSubstr("s3.path_style"));
  EXPECT_THAT(ErrorOf("s3 = 1\n"), HasSubstr("s3: expected a table"));
  // A secret has no key of its own: it comes from the environment.
  EXPECT_THAT(ErrorOf("[s3]\naws_secret_access_key = \"x\"\n"),
              HasSubstr("s3.aws_secret_access_key: unknown key"));
}

}  // namespace
}  // namespace dtf::launch
