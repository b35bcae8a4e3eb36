#include "lib/launch/pack/manifest.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::pack {
namespace {

using ::testing::HasSubstr;

const std::string kDigest(64, 'a');

Manifest Sample() {
  Manifest m;
  m.kind = kKindEnv;
  m.dtf_version = "0.1.0";
  m.arch = "x86_64";
  m.glibc = "2.34";
  m.nccl = "2.18.3";
  m.entry = "bin/dtf";
  m.files = {{"bin/dtf", 10, kDigest, 0755},
             {"lib/libz.so.1", 20, kDigest, 0644}};
  return m;
}

TEST(Manifest, RoundTrips) {
  const std::string json = ManifestToJson(Sample());
  EXPECT_THAT(json, HasSubstr("\"cuda\": null"));
  EXPECT_THAT(json, HasSubstr("\"mode\": \"0755\""));
  EXPECT_EQ(json.back(), '\n');
  StatusOr<Manifest> m = ParseManifest(json, "manifest.json");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kind, "env");
  EXPECT_EQ(m->glibc, "2.34");
  EXPECT_EQ(m->cuda, "");
  EXPECT_EQ(m->nccl, "2.18.3");
  ASSERT_EQ(m->files.size(), 2u);
  EXPECT_EQ(m->files[1].path, "lib/libz.so.1");
  EXPECT_EQ(m->files[1].size, 20u);
  EXPECT_EQ(m->files[1].mode, 0644u);
  EXPECT_EQ(ManifestToJson(*m), json);

  Manifest job;
  job.kind = kKindJob;
  job.dtf_version = "0.1.0";
  job.entry = "job/dtf.toml";
  job.with_data = true;
  job.files = {{"job/dtf.toml", 1, kDigest, 0644}};
  m = ParseManifest(ManifestToJson(job), "manifest.json");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->with_data);
  EXPECT_EQ(m->entry, "job/dtf.toml");
}

TEST(Manifest, BytesThatAreNotUtf8AreWrittenAsReplacementCharacters) {
  Manifest m = Sample();
  m.glibc = "2.\xff";
  std::string json;
  ASSERT_NO_THROW(json = ManifestToJson(m));
  EXPECT_THAT(json, HasSubstr("\"glibc\": \"2.\xef\xbf\xbd\""));
  StatusOr<Manifest> back = ParseManifest(json, "manifest.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->glibc, "2.\xef\xbf\xbd");
  ASSERT_NO_THROW(json = ArchiveSummaryToJson("out/\xfe.zip", kDigest, 1, m));
  EXPECT_THAT(json, HasSubstr("out/\xef\xbf\xbd.zip"));
}

TEST(Manifest, ErrorsNameTheFile) {
  auto error = [](const std::string& json) {
    StatusOr<Manifest> m = ParseManifest(json, "x.zip: manifest.json");
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    return std::string(Message(m.status()));
  };
  EXPECT_EQ(error("{"), "x.zip: manifest.json: not a JSON object");
  std::string json = ManifestToJson(Sample());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = json;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_THAT(error(replaced("\"0755\"", "\"0700\"")),
              HasSubstr("files[0].mode \"0700\" is neither 0755 nor 0644"));
  EXPECT_THAT(error(replaced(kDigest, "abc")),
              HasSubstr("files[0].sha256 is not 64 lowercase hex digits"));
  EXPECT_THAT(error(replaced("\"path\": \"bin/dtf\"", "\"path\": \"../dtf\"")),
              HasSubstr("files[0].path \"../dtf\" is not a relative entry"));
  EXPECT_THAT(error(replaced("\"lib/libz.so.1\"", "\"bin/dtf\"")),
              HasSubstr("out of order or repeated"));
  EXPECT_THAT(error(replaced("\"format\": 1", "\"format\": 2")),
              HasSubstr("format 2 is not one this dtf reads"));
  EXPECT_THAT(error(replaced("\"kind\": \"env\"", "\"kind\": \"tar\"")),
              HasSubstr("unknown kind \"tar\""));
}

TEST(Manifest, CompareVersions) {
  EXPECT_LT(CompareVersions("2.9", "2.17"), 0);
  EXPECT_GT(CompareVersions("2.34", "2.3.4"), 0);
  EXPECT_EQ(CompareVersions("2.34", "2.34"), 0);
  EXPECT_LT(CompareVersions("2.34", "2.34.1"), 0);
  EXPECT_EQ(ModeString(0755), "0755");
}

}  // namespace
}  // namespace dtf::pack
