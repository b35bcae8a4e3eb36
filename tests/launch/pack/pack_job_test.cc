#include "lib/launch/pack/pack_job.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/job_file.h"
#include "lib/launch/pack/unpack.h"
#include "tests/testing/temp_dir.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kJob[] = R"([data]
csv = ["data/*.csv"]
records = "records"

[schema]
columns = ["sex:str", "age:int"]

[[features.categorical]]
name = "sex"
vocabulary_file = "vocab/sex.txt"
)";

class PackJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write("job/dtf.toml", kJob);
    Write("job/vocab/sex.txt", "male\nfemale\n");
    Write("job/data/train.csv", "sex,age\nmale,30\n");
    Write("job/data/eval.csv", "sex,age\nfemale,40\n");
    Write("job/records/train-00000-of-00001.tfrecord", "records");
    Write("job/records/.gen-records-1.tmp/partial", "staging");
    Write("job/profiles/prod.toml", "[hosts]\n");
  }
  void Write(const std::string& name, const std::string& text) {
    fs::create_directories(fs::path(dir_.Join(name)).parent_path());
    dtf::testing::WriteFile(dir_.Join(name), text);
  }
  StatusOr<PackResult> Pack(bool with_data, const std::string& out = "out") {
    PackJobOptions options;
    options.job = dir_.Join("job/dtf.toml");
    options.with_data = with_data;
    options.dtf_version = "0.1.0";
    options.out_dir = dir_.Join(out);
    return PackJob(options);
  }
  static std::vector<std::string> Paths(const Manifest& m) {
    std::vector<std::string> paths;
    for (const ManifestFile& f : m.files) paths.push_back(f.path);
    return paths;
  }
  dtf::testing::TempDir dir_{"dtf_pack_job_test"};
};

TEST_F(PackJobTest, PacksTheJobAndItsVocabulariesButNoData) {
  StatusOr<PackResult> r = Pack(false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.kind, "job");
  EXPECT_EQ(r->manifest.entry, "dtf.toml");
  EXPECT_FALSE(r->manifest.with_data);
  EXPECT_THAT(Paths(r->manifest), ElementsAre("dtf.toml", "vocab/sex.txt"));
  EXPECT_EQ(fs::path(r->archive.path).filename().string(),
            "job-" + r->archive.sha256.substr(0, 16) + ".zip");

  StatusOr<ArchiveListing> listing = ListArchive(r->archive.path);
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_THAT(Paths(listing->manifest),
              ElementsAre("dtf.toml", "vocab/sex.txt"));
}

TEST_F(PackJobTest, WithDataPacksCsvAndRecords) {
  StatusOr<PackResult> r = Pack(true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->manifest.with_data);
  EXPECT_THAT(
      Paths(r->manifest),
      ElementsAre("data/eval.csv", "data/train.csv", "dtf.toml",
                  "records/train-00000-of-00001.tfrecord", "vocab/sex.txt"));
}

TEST_F(PackJobTest, UnpackedJobLoads) {
  StatusOr<PackResult> r = Pack(true);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string dest = dir_.Join("remote/work");
  StatusOr<Manifest> m = UnpackArchive(r->archive.path, dest);
  ASSERT_TRUE(m.ok()) << m.status();
  StatusOr<JobFile> job = LoadJobFile(dest + "/" + m->entry);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->features.categorical[0].vocabulary_file,
            dest + "/vocab/sex.txt");
  EXPECT_EQ(dtf::testing::ReadFile(dest + "/data/train.csv"),
            "sex,age\nmale,30\n");
}

TEST_F(PackJobTest, Reproducible) {
  StatusOr<PackResult> a = Pack(true, "a");
  StatusOr<PackResult> b = Pack(true, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(fs::path(a->archive.path).filename(),
            fs::path(b->archive.path).filename());
  EXPECT_EQ(dtf::testing::ReadFile(a->archive.path),
            dtf::testing::ReadFile(b->archive.path));
  // Other contents, another name.
  Write("job/vocab/sex.txt", "female\nmale\n");
  StatusOr<PackResult> c = Pack(true, "c");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(fs::path(a->archive.path).filename(),
            fs::path(c->archive.path).filename());
}

TEST_F(PackJobTest, FilesOutsideTheJobDirectoryKeepTheirRelativePaths) {
  Write("shared/sex.txt", "male\nfemale\n");
  std::string text = kJob;
  text.replace(text.find("vocab/sex.txt"), 13, "../shared/sex.txt");
  Write("job/dtf.toml", text);
  StatusOr<PackResult> r = Pack(false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.entry, "job/dtf.toml");
  EXPECT_THAT(Paths(r->manifest),
              ElementsAre("job/dtf.toml", "shared/sex.txt"));
  const std::string dest = dir_.Join("remote");
  StatusOr<Manifest> m = UnpackArchive(r->archive.path, dest);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(LoadJobFile(dest + "/" + m->entry).ok());
}

TEST_F(PackJobTest, MissingJobFile) {
  PackJobOptions options;
  options.job = dir_.Join("job/none.toml");
  options.out_dir = dir_.Join("out");
  StatusOr<PackResult> r = PackJob(options);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(r.status()), HasSubstr(dir_.Join("job/none.toml")));
  EXPECT_FALSE(fs::exists(dir_.Join("out")));
}

TEST_F(PackJobTest, MissingVocabularyFile) {
  fs::remove(dir_.Join("job/vocab/sex.txt"));
  StatusOr<PackResult> r = Pack(false);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(r.status()),
              HasSubstr(dir_.Join("job/dtf.toml") +
                        ":10:19: features.categorical[0].vocabulary_file: " +
                        dir_.Join("job/vocab/sex.txt")));
  EXPECT_FALSE(fs::exists(dir_.Join("out")));
}

TEST_F(PackJobTest, DataFileNameThatIsNotUtf8IsAnError) {
  // data/*.csv matches it; the archive's JSON manifest could not name it.
  Write("job/data/caf\xe9.csv", "sex,age\nmale,30\n");
  StatusOr<PackResult> r = Pack(true);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(r.status()), HasSubstr("UTF-8"));
  EXPECT_FALSE(fs::exists(dir_.Join("out")));
  EXPECT_TRUE(Pack(false).ok());
}

TEST_F(PackJobTest, WithDataNeedsTheCsvFiles) {
  fs::remove(dir_.Join("job/data/train.csv"));
  fs::remove(dir_.Join("job/data/eval.csv"));
  EXPECT_TRUE(Pack(false).ok());
  StatusOr<PackResult> r = Pack(true);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(r.status()), HasSubstr("data.csv: no file matches " +
                                             dir_.Join("job/data/*.csv")));
}

TEST_F(PackJobTest, RefusesFilesWhereSecretsLive) {
  Write("job/.dtf/runs/x/sex.txt", "male\nfemale\n");
  std::string text = kJob;
  text.replace(text.find("vocab/sex.txt"), 13, ".dtf/runs/x/sex.txt");
  Write("job/dtf.toml", text);
  StatusOr<PackResult> r = Pack(false);
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(r.status()), HasSubstr("refusing to pack"));
}

// PackFiles: chosen files under chosen names, as dtf predict --profile
// ships a model and its inputs.
TEST_F(PackJobTest, PackFilesNamesEachEntry) {
  PackFilesOptions o;
  o.files = {{"model/model.json", dir_.Join("job/dtf.toml")},
             {"inputs/000000-train.csv", dir_.Join("job/data/train.csv")}};
  o.entry = "model";
  o.with_data = true;
  o.dtf_version = "0.1.0";
  o.out_dir = dir_.Join("files");
  o.prefix = "batch-";
  StatusOr<PackResult> r = PackFiles(o, "predict");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.kind, "job");
  EXPECT_EQ(r->manifest.entry, "model");
  EXPECT_TRUE(r->manifest.with_data);
  EXPECT_THAT(Paths(r->manifest),
              ElementsAre("inputs/000000-train.csv", "model/model.json"));
  EXPECT_EQ(fs::path(r->archive.path).filename().string(),
            "batch-" + r->archive.sha256.substr(0, 16) + ".zip");
  const std::string dest = dir_.Join("remote/files");
  StatusOr<Manifest> m = UnpackArchive(r->archive.path, dest);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(dtf::testing::ReadFile(dest + "/inputs/000000-train.csv"),
            "sex,age\nmale,30\n");
  EXPECT_EQ(dtf::testing::ReadFile(dest + "/model/model.json"), kJob);
}

TEST_F(PackJobTest, PackFilesRefusesBadNamesAndSecrets) {
  PackFilesOptions o;
  o.dtf_version = "0.1.0";
  o.out_dir = dir_.Join("files");
  for (const char* name : {"/abs", "../up", ""}) {
    o.files = {{name, dir_.Join("job/dtf.toml")}};
    StatusOr<PackResult> r = PackFiles(o, "predict");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(Message(r.status()), HasSubstr("predict: archive entry"));
  }
  o.files = {{"a", dir_.Join("job/dtf.toml")},
             {"./a", dir_.Join("job/dtf.toml")}};
  EXPECT_EQ(PackFiles(o, "predict").status().code(),
            StatusCode::kInvalidArgument);
  Write("job/.ssh/id", "key");
  o.files = {{"id", dir_.Join("job/.ssh/id")}};
  StatusOr<PackResult> r = PackFiles(o, "predict");
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(r.status()), HasSubstr("refusing to pack"));
}

}  // namespace
}  // namespace dtf::pack
