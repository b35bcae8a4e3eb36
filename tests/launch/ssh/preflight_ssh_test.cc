// The SSH preflight against real sshd servers: a server without the SFTP
// subsystem is refused up front, and a profile that does not ship the data
// fails on a host that lacks the job's records, naming the path there.
#include <gmock/gmock.h>

#include <filesystem>
#include <string>

#include "lib/base/strings.h"
#include "lib/launch/pack/job_data.h"
#include "lib/launch/ssh/data_preflight.h"
#include "lib/launch/ssh/preflight.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using ssh::testing::Sshd;
using ssh::testing::SshdTest;
using ::testing::HasSubstr;

constexpr char kJobId[] = "0123456789abcdef";

class PreflightSshTest : public SshdTest {
 protected:
  // A plan of one host per server, no tasks, everything under dir_.
  Plan PlanFor(const std::vector<const Sshd*>& servers) {
    Plan plan;
    plan.backend = BackendKind::kSsh;
    plan.job = dir_.Join("job/dtf.toml");
    plan.work_dir = dir_.Join("work");
    plan.ssh.user = ssh::testing::LocalUser();
    plan.ssh.identity_file = dir_.Join("id_ed25519");
    plan.ssh.known_hosts = dir_.Join("known_hosts");
    plan.ssh.config = "none";
    plan.ssh.connect_timeout = 5;
    for (const Sshd* s : servers) {
      HostEntry h;
      h.host = s->address();
      h.port = s->port();
      plan.hosts.push_back(h);
    }
    return plan;
  }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    dtf::testing::WriteFile(path, text);
  }
  // The job archive's id and entry as CheckJobData reads them.
  static pack::PackResult Job() {
    pack::PackResult job;
    job.archive.sha256 = std::string(kJobId) + std::string(48, '0');
    job.manifest.entry = "dtf.toml";
    return job;
  }
  void WriteJob(const std::string& records) {
    Write(dir_.Join("job/dtf.toml"),
          StrCat("[data]\ncsv = { train = [\"train.csv\"], eval = "
                 "[\"eval.csv\"] }\nrecords = \"",
                 records, "\"\n\n[schema]\ncolumns = [\"age:int\"]\n"));
  }
};

TEST_F(PreflightSshTest, AServerWithoutSftpIsRefusedUpFront) {
  StatusOr<std::unique_ptr<Sshd>> bare =
      Sshd::Start(dir_.path(), "nosftp", "127.0.0.3", /*known=*/true,
                  /*sftp=*/false);
  ASSERT_TRUE(bare.ok()) << bare.status();
  const Plan plan = PlanFor({sshd_.get(), bare->get()});
  const PreflightResult result = Preflight(plan, PreflightOptions{});
  ASSERT_EQ(result.rows.size(), 2u);
  EXPECT_TRUE(result.rows[0].ok) << result.rows[0].problem;
  EXPECT_FALSE(result.rows[1].ok);
  EXPECT_EQ(result.rows[1].ssh, "no SFTP");
  EXPECT_EQ(result.hosts[1], nullptr);
  EXPECT_THAT(Message(result.ToStatus()),
              HasSubstr("127.0.0.3: sshd has no SFTP subsystem; add "
                        "`Subsystem sftp internal-sftp` to its sshd_config"));
  EXPECT_THAT(PreflightTable(result), HasSubstr("no SFTP"));
}

TEST_F(PreflightSshTest, RecordsRelativeToTheJobAreLookedForInTheShippedJob) {
  WriteJob("records");
  // Here, beside the job, is not there: the host's tasks read the records
  // under the unpacked job.
  Write(dir_.Join("job/records/train/part-00000-of-00001.tfrecord"), "r");
  Write(dir_.Join("job/records/eval/part-00000-of-00001.tfrecord"), "r");
  const Plan plan = PlanFor({sshd_.get()});
  PreflightResult result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(result.ok()) << result.ToStatus();
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  const std::string there =
      StrCat(dir_.Join("work"), "/jobs/", kJobId, "/records/train");
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_EQ(result.rows[0].data, "missing");
  EXPECT_EQ(result.hosts[0], nullptr);
  const std::string message(Message(result.ToStatus()));
  EXPECT_THAT(message, HasSubstr(StrCat("127.0.0.2: no TFRecord shards "
                                        "(part-*.tfrecord*) in ",
                                        there)));
  EXPECT_THAT(message, HasSubstr("with_data = true"));
  EXPECT_THAT(message, HasSubstr("same path"));
  EXPECT_THAT(PreflightTable(result), HasSubstr("missing"));

  // Records put on the host where the task will read them pass; an index
  // file alone is no shard.
  Write(StrCat(there, "/part-00000-of-00001.tfrecord"), "r");
  const std::string eval =
      StrCat(dir_.Join("work"), "/jobs/", kJobId, "/records/eval");
  Write(StrCat(eval, "/part-00000-of-00001.tfrecord.index"), "i");
  result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_THAT(result.rows[0].problem, HasSubstr(eval));
  EXPECT_THAT(result.rows[0].problem, ::testing::Not(HasSubstr(there)));
  Write(StrCat(eval, "/part-00000-of-00001.tfrecord.gz"), "r");
  result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_TRUE(result.rows[0].ok) << result.rows[0].problem;
  EXPECT_EQ(result.rows[0].data, "ok");
  EXPECT_NE(result.hosts[0], nullptr);
}

TEST_F(PreflightSshTest, AbsoluteRecordsAreLookedForAtTheSamePath) {
  const std::string shared = dir_.Join("shared/records");
  WriteJob(shared);
  const Plan plan = PlanFor({sshd_.get()});
  PreflightResult result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_THAT(result.rows[0].problem, HasSubstr(shared + "/train"));
  Write(shared + "/train/part-00000-of-00002.tfrecord", "r");
  Write(shared + "/eval/part-00000-of-00001.tfrecord", "r");
  result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_TRUE(result.rows[0].ok) << result.rows[0].problem;

  // A --set that moves the records is what the tasks get, so it is what is
  // looked for.
  Plan moved = plan;
  moved.sets = {StrCat("data.records=\"", dir_.Join("elsewhere"), "\"")};
  result = Preflight(moved, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(moved, Job(), &result).ok());
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_THAT(result.rows[0].problem, HasSubstr(dir_.Join("elsewhere/train")));
}

// The look for the records gets the probe's time (doctor --timeout), not
// a limit of its own: with 100 hosts on one loaded machine it took longer
// than a fixed 20 s and failed hosts that were ready.
TEST_F(PreflightSshTest, TheRecordCheckHasTheProbesTimeout) {
  const std::string shared = dir_.Join("shared/records");
  WriteJob(shared);
  Write(shared + "/train/part-00000-of-00001.tfrecord", "r");
  Write(shared + "/eval/part-00000-of-00001.tfrecord", "r");
  const Plan plan = PlanFor({sshd_.get()});
  PreflightOptions options;
  options.probe_timeout = std::chrono::milliseconds(45000);
  PreflightResult result = Preflight(plan, options);
  EXPECT_EQ(result.probe_timeout, std::chrono::milliseconds(45000));
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_TRUE(result.rows[0].ok) << result.rows[0].problem;

  result = Preflight(plan, PreflightOptions{});
  result.probe_timeout = std::chrono::milliseconds(1);
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_THAT(result.rows[0].problem, HasSubstr("within 1 ms"));
}

TEST_F(PreflightSshTest, ShippedDataIsNotLookedFor) {
  WriteJob("records");
  Plan plan = PlanFor({sshd_.get()});
  plan.with_data = true;
  PreflightResult result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result).ok());
  EXPECT_TRUE(result.rows[0].ok);
  EXPECT_EQ(result.rows[0].data, "shipped");
}

// A batch plan without with_data (dtf predict --profile): each input file
// must be readable at its own path on the host; the job's records are not
// looked for.
TEST_F(PreflightSshTest, BatchInputFilesAreLookedForAtTheSamePath) {
  Plan plan = PlanFor({sshd_.get()});
  plan.batch = true;
  plan.job = dir_.Join("model");
  const std::string a = dir_.Join("in/a.tfrecord");
  const std::string b = dir_.Join("in/b c.tfrecord");
  Write(a, "r");
  BatchFiles files;
  files.on_hosts = {a, b};
  PreflightResult result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result, files).ok());
  EXPECT_FALSE(result.rows[0].ok);
  EXPECT_EQ(result.rows[0].data, "missing");
  EXPECT_EQ(result.hosts[0], nullptr);
  EXPECT_THAT(result.rows[0].problem, HasSubstr(b));
  EXPECT_THAT(result.rows[0].problem, ::testing::Not(HasSubstr(a)));
  const std::string message(Message(result.ToStatus()));
  EXPECT_THAT(message, HasSubstr("127.0.0.2: no readable file at " + b));
  EXPECT_THAT(message, HasSubstr("with_data = true"));

  Write(b, "r");
  result = Preflight(plan, PreflightOptions{});
  ASSERT_TRUE(CheckJobData(plan, Job(), &result, files).ok());
  EXPECT_TRUE(result.rows[0].ok) << result.rows[0].problem;
  EXPECT_EQ(result.rows[0].data, "ok");
  EXPECT_NE(result.hosts[0], nullptr);
}

}  // namespace
}  // namespace dtf::launch
