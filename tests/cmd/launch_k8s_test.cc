// dtf launch with a backend = "kubernetes" profile and mutual TLS: the
// rendered Secret holds the run's CA certificate and each task's
// certificate and key, never the CA's key, and every pod's dtf serve reads
// them by its task's name; tls = false renders none of it and warns; a dry
// run prints placeholders and writes nothing.
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

struct Launched {
  int code = -1;
  std::string out;
  std::string err;
};

// The Secret's `data` (decoded) and `stringData`, by key, from the YAML
// dtf writes (block style, one quoted scalar a line).
struct SecretData {
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> string_data;
};

SecretData ParseSecret(const std::string& yaml) {
  SecretData out;
  std::map<std::string, std::string>* section = nullptr;
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    if (line == "data:") {
      section = &out.data;
    } else if (line == "stringData:") {
      section = &out.string_data;
    } else if (!line.starts_with("  ")) {
      section = nullptr;
    } else if (section != nullptr) {
      const size_t colon = line.find(": \"");
      if (colon == std::string::npos || !line.ends_with("\"")) continue;
      std::string key = line.substr(2, colon - 2);
      if (key.size() >= 2 && key.front() == '"') {
        key = key.substr(1, key.size() - 2);
      }
      std::string value = line.substr(colon + 3);
      value.pop_back();
      if (section == &out.data) {
        std::string decoded;
        EXPECT_TRUE(absl::Base64Unescape(value, &decoded)) << key;
        value = decoded;
      }
      (*section)[key] = value;
    }
  }
  return out;
}

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

EVP_PKEY* ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

// Whether `cert_pem` verifies against `ca_pem`, names `name` and is the
// certificate of `key_pem`.
bool TaskCert(const std::string& ca_pem, const std::string& cert_pem,
              const std::string& key_pem, const std::string& name) {
  X509* ca = ParseCert(ca_pem);
  X509* leaf = ParseCert(cert_pem);
  EVP_PKEY* key = ParseKey(key_pem);
  bool ok = ca != nullptr && leaf != nullptr && key != nullptr;
  if (ok) {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    ok = X509_verify_cert(ctx) == 1 &&
         X509_check_host(leaf, name.c_str(), name.size(), 0, nullptr) == 1 &&
         X509_check_private_key(leaf, key) == 1 && X509_check_ca(leaf) == 0;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
  }
  EVP_PKEY_free(key);
  X509_free(leaf);
  X509_free(ca);
  return ok;
}

// Whether `key_pem` is the private key of `cert_pem`.
bool KeyOf(const std::string& cert_pem, const std::string& key_pem) {
  X509* cert = ParseCert(cert_pem);
  EVP_PKEY* key = ParseKey(key_pem);
  const bool match = cert != nullptr && key != nullptr &&
                     X509_check_private_key(cert, key) == 1;
  EVP_PKEY_free(key);
  X509_free(cert);
  return match;
}

// Every path under `dir`, sorted.
std::vector<std::string> Tree(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class LaunchK8sTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(temp_.Join("job/profiles"));
    std::filesystem::copy_file(
        std::string(DTF_SOURCE_DIR) + "/examples/census/dtf.toml",
        temp_.Join("job/dtf.toml"));
  }

  void WriteProfile(const std::string& extra) {
    std::ofstream(temp_.Join("job/profiles/k8s.toml"))
        << "backend = \"kubernetes\"\nps = 2\nworkers = 2\n"
        << extra
        << "[kubernetes]\nimage = \"dtf:test\"\njob_dir = \"/srv/job\"\n";
  }

  Launched Launch(const std::string& args) {
    const std::string cmd = "cd '" + temp_.Join("job") + "' && '" + DTF_BINARY +
                            "' launch --profile k8s " + args +
                            " >../out.txt 2>../err.txt </dev/null";
    const int status = std::system(cmd.c_str());
    Launched r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = dtf::testing::ReadFile(temp_.Join("out.txt"));
    r.err = dtf::testing::ReadFile(temp_.Join("err.txt"));
    return r;
  }

  dtf::testing::TempDir temp_{"dtf_launch_k8s_test"};
};

TEST_F(LaunchK8sTest, TheSecretHoldsEachTasksCertificateAndNoCaKey) {
  WriteProfile("");
  const Launched r = Launch("--render ../render");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("tls = false")));
  const SecretData s =
      ParseSecret(dtf::testing::ReadFile(temp_.Join("render/secret.yaml")));
  EXPECT_TRUE(s.string_data.empty());
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.data) keys.push_back(k);
  EXPECT_THAT(keys,
              ElementsAre("ca.pem", "ps-0.key", "ps-0.pem", "ps-1.key",
                          "ps-1.pem", "secret", "worker-0.key", "worker-0.pem",
                          "worker-1.key", "worker-1.pem"));
  const std::string& ca = s.data.at("ca.pem");
  for (const char* task : {"ps-0", "ps-1", "worker-0", "worker-1"}) {
    const std::string name = task;
    EXPECT_TRUE(
        TaskCert(ca, s.data.at(name + ".pem"), s.data.at(name + ".key"), name))
        << name;
    // Each certificate names its own task only.
    EXPECT_FALSE(TaskCert(ca, s.data.at(name + ".pem"),
                          s.data.at(name + ".key"),
                          name == "ps-0" ? "ps-1" : "ps-0"))
        << name;
  }
  // No key of the Secret is the CA's.
  for (const auto& [k, v] : s.data) {
    EXPECT_FALSE(KeyOf(ca, v)) << k;
  }
  // Every pod's dtf serve reads them from the Secret's mount by task name.
  const std::string job = dtf::testing::ReadFile(temp_.Join("render/job.yaml"));
  EXPECT_THAT(job, HasSubstr("        - \"--tls-dir\"\n"
                             "        - \"/etc/dtf/secret\"\n"
                             "        - \"--tls-task-names\"\n"));
}

TEST_F(LaunchK8sTest, TlsOffRendersNoTlsMaterialAndWarns) {
  WriteProfile("tls = false\n");
  const Launched r = Launch("--render ../render");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("profiles/k8s.toml:4:7: tls = false: the run's "
                               "secret and every tensor cross the network in "
                               "plaintext"));
  const SecretData s =
      ParseSecret(dtf::testing::ReadFile(temp_.Join("render/secret.yaml")));
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.data) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("secret"));
  const std::string job = dtf::testing::ReadFile(temp_.Join("render/job.yaml"));
  EXPECT_THAT(job, Not(HasSubstr("--tls-dir")));
  EXPECT_THAT(job, Not(HasSubstr("--tls-task-names")));
}

// mode = "allreduce": no parameter server, as on every backend — the
// profile's ps = 2 makes no pod and no certificate.
TEST_F(LaunchK8sTest, AnAllreduceRunHasNoParameterServers) {
  WriteProfile("");
  const Launched r = Launch(
      "--set train.mode=allreduce --set train.device=cpu --render ../render");
  ASSERT_EQ(r.code, 0) << r.err;
  const SecretData s =
      ParseSecret(dtf::testing::ReadFile(temp_.Join("render/secret.yaml")));
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.data) keys.push_back(k);
  EXPECT_THAT(keys,
              ElementsAre("ca.pem", "secret", "worker-0.key", "worker-0.pem",
                          "worker-1.key", "worker-1.pem"));
  const std::string job = dtf::testing::ReadFile(temp_.Join("render/job.yaml"));
  EXPECT_THAT(job, HasSubstr("  completions: 2\n"));
  EXPECT_THAT(job, HasSubstr("        - \"--ps\"\n        - \"\"\n"));
}

// Elastic workers on Kubernetes: min_workers lets workers - min_workers
// indexes fail for good (maxFailedIndexes); refused, naming the profile's
// key, for an allreduce job, above the run's workers, and for a TFJob.
TEST_F(LaunchK8sTest, MinWorkersSetsHowManyWorkerIndexesMayFail) {
  WriteProfile("min_workers = 2\n");
  Launched r = Launch("--workers 3 --render ../render");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(dtf::testing::ReadFile(temp_.Join("render/job.yaml")),
              HasSubstr("  maxFailedIndexes: 1\n"));

  r = Launch("--set train.mode=allreduce --set train.device=cpu --dry-run");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("profiles/k8s.toml:4:15: min_workers = 2: "));
  EXPECT_THAT(r.err, HasSubstr("trains in allreduce mode, whose workers "
                               "restart together at another size where dtf "
                               "launch stops and starts them itself"));
  EXPECT_THAT(r.err, HasSubstr("this profile's backend is kubernetes"));
  r = Launch("--workers 1 --dry-run");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("min_workers = 2 is more than the run's 1 "
                               "workers"));
  std::ofstream(temp_.Join("job/profiles/k8s.toml"))
      << "backend = \"kubernetes\"\nps = 2\nworkers = 2\nmin_workers = 1\n"
      << "[kubernetes]\nimage = \"dtf:test\"\njob_dir = \"/srv/job\"\n"
      << "flavour = \"tfjob\"\n";
  r = Launch("--dry-run");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("min_workers = 1: elastic workers need "
                               "flavour = \"job\""));
}

TEST_F(LaunchK8sTest, DryRunPrintsPlaceholdersAndWritesNothing) {
  WriteProfile("");
  const std::vector<std::string> before = Tree(temp_.Join("job"));
  const Launched r = Launch("--dry-run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("BEGIN")));
  EXPECT_THAT(r.out, HasSubstr("stringData:\n  secret: \"(generated when the "
                               "run is applied)\"\n  ca.pem: \"(generated"));
  EXPECT_THAT(r.out, HasSubstr("  worker-1.key: \"(generated when the run is "
                               "applied)\"\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("ca.key")));
  EXPECT_THAT(r.out, HasSubstr("--tls-task-names"));
  EXPECT_EQ(Tree(temp_.Join("job")), before);
}

}  // namespace
