// libFuzzer target for the job file (ParseJobFile, as LoadJobFile reads
// dtf.toml). The input is the file's text, loaded as <tmp>/job/dtf.toml from
// an empty directory, so relative paths name nothing. An error must be a
// Status; a job with a model must write back (ModelDefinitionToToml) to text
// that loads again and writes back to the same text. scripts/fuzz.sh runs it
// with -max_len=65536: toml++ recurses once per nesting level.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "lib/data/job_file.h"
#include "lib/data/job_toml.h"

namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "job_file_fuzz: %s\n", what);
  std::abort();
}

// An empty directory of this process, removed at exit.
class JobDir {
 public:
  JobDir() {
    std::string dir =
        (std::filesystem::temp_directory_path() / "dtf_job_file_fuzz.XXXXXX")
            .string();
    Check(::mkdtemp(dir.data()) != nullptr, "cannot make a directory");
    root_ = dir;
    path_ = dir + "/job/dtf.toml";
  }
  ~JobDir() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string root_;
  std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const JobDir dir;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto job = dtf::ParseJobFile(text, dir.path());
  if (!job.ok()) {
    Check(!dtf::Message(job.status()).empty(), "error without a message");
    return 0;
  }
  if (!job->model) return 0;
  const std::string written = dtf::ModelDefinitionToToml(*job);
  auto again = dtf::ParseJobFile(written, dir.path());
  if (!again.ok()) {
    std::fprintf(stderr, "job_file_fuzz: %s\n--- written:\n%s\n",
                 again.status().ToString().c_str(), written.c_str());
  }
  Check(again.ok(), "the written model definition does not load");
  Check(again->model.has_value(), "the written definition lost its model");
  Check(dtf::ModelDefinitionToToml(*again) == written,
        "the written definition writes back differently");
  return 0;
}
