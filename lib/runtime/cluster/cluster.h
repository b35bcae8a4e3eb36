// How a task learns the cluster it belongs to (docs/cluster.md): dtf's own
// host:port lists, TensorFlow's --cluster_spec string and TensorFlow's
// TF_CONFIG JSON. Parsers check syntax only; ValidateCluster checks that a
// cluster can run. Errors are InvalidArgument and quote the offending text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"

namespace dtf::runtime {

struct TaskAddress {
  // A name or an IP address; IPv6 without brackets ("::1").
  std::string host;
  int port = 0;

  // "host:port", or "[host]:port" when the host holds a ':' (IPv6).
  std::string ToString() const;
  bool operator==(const TaskAddress&) const = default;
};

// "host:port", "1.2.3.4:port" or "[v6]:port" (a zone as in "[fe80::1%eth0]"
// is kept); the port is 1-65535.
StatusOr<TaskAddress> ParseTaskAddress(std::string_view text);

struct ClusterSpec {
  std::vector<TaskAddress> ps;
  std::vector<TaskAddress> workers;
  std::vector<TaskAddress> chief;  // 0 or 1 (ValidateCluster checks)
  std::vector<TaskAddress> evaluators;

  // The tasks of `role`.
  const std::vector<TaskAddress>& tasks(Role role) const;
  std::vector<TaskAddress>& tasks(Role role);
  // The coordinating task: chief:0 if there is a chief, else worker:0.
  TaskName coordinator() const;
  // The address of `id`; nullptr when the cluster has no such task.
  const TaskAddress* Find(const TaskName& id) const;
  // Tasks that train: workers and the chief.
  int num_trainers() const;

  bool operator==(const ClusterSpec&) const = default;
};

// TensorFlow's --cluster_spec string: jobs separated by ',', each
// "name|host:port;host:port", e.g. "ps|h:p;h:p,worker|h:p;h:p,chief|h:p".
// Job names are those of RoleName, each at most once; spaces around names and
// addresses are ignored.
StatusOr<ClusterSpec> ParseClusterSpecString(std::string_view text);
// The string ParseClusterSpecString reads, jobs in the order ps, worker,
// chief, evaluator, empty jobs left out.
std::string ClusterSpecToString(const ClusterSpec& cluster);

// TF_CONFIG: {"cluster": {"ps": [...], "worker": [...], "chief": [...],
// "evaluator": [...]}, "task": {"type": "worker", "index": 0}}.
struct TfConfig {
  ClusterSpec cluster;
  TaskName task;

  bool operator==(const TfConfig&) const = default;
};

// Reads TF_CONFIG as TensorFlow does: jobs may be left out, a missing
// task.index is 0, an index may be a number or a decimal string, and other
// keys ("rpc_layer", "environment", "task.trial") are ignored. Jobs other
// than the four roles, a missing "task" or "task.type", and anything of the
// wrong JSON type are errors starting "TF_CONFIG: " and naming the key.
StatusOr<TfConfig> ParseTfConfig(std::string_view json);
// Compact JSON that ParseTfConfig reads back (and TensorFlow reads); empty
// jobs left out.
std::string TfConfigToJson(const TfConfig& config);

// dtf's own flags: comma-separated host:port lists ("h:1,h:2"); spaces
// around addresses are ignored and "" is the empty list.
StatusOr<std::vector<TaskAddress>> ParseAddressList(std::string_view text);

// Checks that the cluster can run with `self` as one of its tasks: at least
// one worker or chief; at most one chief; every address well-formed and used
// by one task only (hosts compared case-insensitively); `self` in the
// cluster. An evaluator:0 need not be listed when the cluster lists no
// evaluator (TensorFlow's Estimator keeps the evaluator outside the cluster).
// InvalidArgument naming the tasks and addresses at fault.
Status ValidateCluster(const ClusterSpec& cluster, const TaskName& self);

}  // namespace dtf::runtime
