// The Kubernetes objects of one run (docs/launch.md, "Kubernetes"), as
// YAML documents:
//
//   secret.yaml     the run's secret, mounted read-only (mode 0400) at
//                   /etc/dtf/secret/secret; with TLS, also the run's CA
//                   certificate and every task's certificate and key
//                   (ca.pem, ps-0.pem, ps-0.key, ...) beside it, which
//                   dtf serve --tls-dir /etc/dtf/secret --tls-task-names
//                   reads by its task's name; for a job in an object store,
//                   s3-credentials (the tasks' S3 settings and
//                   credentials, read with --s3-credentials)
//   configmap.yaml  the job file, mounted at <job_dir>/dtf.toml
//   flavour "job":
//     service.yaml  a headless Service (publishNotReadyAddresses) naming
//                   every pod <run>-<i>.<run>.<ns>.svc.<domain>
//     job.yaml      an Indexed Job of ps + workers pods: index < ps is a
//                   parameter server, the rest workers (with max_workers,
//                   ps + started_workers of them at first: an elastic
//                   Indexed Job, completions = parallelism, which dtf
//                   scale patches up to ps + workers); it succeeds when
//                   every worker index has (successPolicy), a failed
//                   index is retried max_restarts times
//                   (backoffLimitPerIndex, podReplacementPolicy Failed),
//                   and it fails once more than workers - min_workers
//                   indexes have failed for good (maxFailedIndexes)
//   flavour "tfjob":
//     tfjob.yaml    a Kubeflow TFJob: Chief (dtf's worker 0), PS and
//                   Worker replicas, container "tensorflow", restartPolicy
//                   ExitCode, cleanPodPolicy Running; dtf serve reads the
//                   TF_CONFIG the operator sets
//
// Every object carries the labels app.kubernetes.io/name=dtf and
// dtf.dev/run-id=<run id>.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/k8s/k8s_object.h"
#include "lib/launch/k8s/k8s_profile.h"

namespace dtf::launch::k8s {

// A file of the Secret beside the run's secret: its key (a flat file name)
// and bytes; empty bytes render a placeholder (a dry run prints no key).
struct SecretFile {
  std::string name;
  std::string contents;
};

struct RenderRequest {
  KubernetesProfile profile;
  std::string run_id;  // FormatRunId's form
  int ps = 1;
  // The worker slots: every worker's address and certificate are made.
  int workers = 2;
  // The profile's max_workers (flavour "job"): the workers the Job starts
  // with, the slots above waiting for dtf scale; 0: every one.
  int started_workers = 0;
  int threads = 0;       // 0: not passed
  int max_restarts = 0;  // retries of a failed pod
  // Flavour "job": how many worker indexes must be left (the profile's
  // min_workers; 0: every one). The Job fails once more than workers -
  // min_workers indexes have failed for good (maxFailedIndexes).
  int min_workers = 0;
  std::string device;  // "" or "cpu", "cuda", "cuda:N" (--set train.device)
  std::vector<std::string> sets;  // --set, passed to every task
  std::map<std::string, std::string> env;
  std::string job_text;  // the job file's bytes
  // The secret's 64 hex digits; "" renders a placeholder (a dry run prints
  // no secret).
  std::string secret;
  // Mutual TLS between the pods: every task's dtf serve gets --tls-dir
  // kSecretMountDir --tls-task-names, and the Secret holds `tls_files` (the
  // CA's certificate and each task's certificate and key, never the CA's
  // key). Off: neither.
  bool tls = false;
  std::vector<SecretFile> tls_files;
  // The tasks' S3 settings and credentials (PlanRequest::s3_credentials):
  // with `s3`, the Secret holds them as "s3-credentials" and every task's
  // dtf serve gets --s3-credentials kSecretMountDir/s3-credentials; an
  // empty `s3_credentials` renders a placeholder (a dry run prints no key).
  bool s3 = false;
  std::string s3_credentials;
};

// The run's name in the cluster: "dtf-" and the run id, lowercase.
std::string ObjectName(const std::string& run_id);

// The objects in the order they are applied. InvalidArgument for counts or
// names Kubernetes cannot take, a TLS file named "secret" or with a
// character a Secret's key cannot hold, and a Secret over Kubernetes' 1 MiB
// (too many tasks for their certificates).
StatusOr<std::vector<RenderedObject>> RenderManifests(const RenderRequest& r);

// The documents joined by "---" lines, as kubectl apply -f - reads them.
std::string JoinDocuments(const std::vector<RenderedObject>& objects);

}  // namespace dtf::launch::k8s
