// Where a Kubernetes run's pods write the job's train.output_dir
// (checkpoints, events, the exported model), and whether that outlives
// them: only a directory on the profile's output volume does; the job
// directory is an emptyDir, gone with its pod.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/launch/k8s/k8s_profile.h"

namespace dtf::launch::k8s {

// train.output_dir as the pods see it: the last --set train.output_dir=
// of `sets`, else the job file's [train] output_dir, else "out"; a relative
// one under p.job_dir; an s3:// URL as it is. A job text that does not parse
// gives its default (dtf serve reports the job's errors, naming the file).
std::string PodOutputDir(std::string_view job_text,
                         const std::vector<std::string>& sets,
                         const KubernetesProfile& p);

// "" when `output_dir` lies on p's output volume or in a bucket (s3://);
// else the warning to give:
// the checkpoints and model there are lost with the pods, and a replaced
// pod starts over.
std::string LostOutputWarning(const std::string& output_dir,
                              const KubernetesProfile& p);

}  // namespace dtf::launch::k8s
