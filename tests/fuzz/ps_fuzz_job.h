// The small job that ps_store_fuzz serves and fuzz_seeds writes its seeds
// for: a hashed feature in both parts (a sparse table and wide weights), a
// numeric one, batch normalization (moving statistics, not trained), and a
// hidden layer of two units.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lib/data/job_file.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::fuzzing {

inline constexpr char kPsFuzzJob[] = R"(
[schema]
label = "label"
columns = ["label:int", "key:str", "x:float"]

[[features.hashed]]
name = "key"
buckets = 16
embedding = 2
wide = true

[[features.numeric]]
name = "x"
wide = true

[model]
type = "wide_deep"
hidden = [2]
batch_norm = true

[train]
seed = 3
)";

struct PsFuzzJob {
  JobFile job;
  std::vector<runtime::VariableSpec> layout;
};

// kPsFuzzJob with train.mode = `mode`, loaded through a temporary file;
// exits the process when it does not load (the harness is broken then).
inline PsFuzzJob LoadPsFuzzJob(const std::string& mode) {
  char path[] = "/tmp/ps_fuzz_job.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) std::abort();
  const std::string text = kPsFuzzJob;
  if (::write(fd, text.data(), text.size()) != ssize_t(text.size())) {
    std::abort();
  }
  ::close(fd);
  StatusOr<JobFile> job = LoadJobFile(path, {"train.mode=" + mode});
  ::unlink(path);
  if (!job.ok()) {
    std::fprintf(stderr, "ps fuzz job: %s\n", job.status().ToString().c_str());
    std::abort();
  }
  StatusOr<runtime::FeatureLayer> layer =
      runtime::FeatureLayer::Create(job->schema, job->features, *job->model);
  if (!layer.ok()) std::abort();
  StatusOr<std::vector<runtime::VariableSpec>> layout =
      runtime::Model::Layout(*layer, *job->model);
  if (!layout.ok()) std::abort();
  return {*std::move(job), *std::move(layout)};
}

}  // namespace dtf::fuzzing
