// Reading whole files with a bound on their size, and files that must be
// private to this user (secrets). Every error names the path.
#pragma once

#include <cstddef>
#include <string>

#include "lib/base/status.h"

namespace dtf {

// Reads a whole file into memory as ReadFileToString (file.h) does, but a
// file longer than `max_bytes` is InvalidArgument "<path>: larger than
// <max_bytes> bytes" once that many have been read.
StatusOr<std::string> ReadFileToStringAtMost(const std::string& path,
                                             size_t max_bytes);

// Reads a file that must be private to this user, such as a secret: opened
// without following a symbolic link (O_NOFOLLOW), it must be a regular file
// owned by the current user with no group or other permission bits (0600
// or stricter) and at most `max_bytes` long, all checked on the opened
// descriptor. Each refusal is InvalidArgument naming the path and what is
// wrong ("<path>: mode 0644, must not be readable by group or others (chmod
// 600)").
//
// One kind of link is read through: a key of a Kubernetes Secret (or
// ConfigMap) volume, which the kubelet writes as `<dir>/<key>` ->
// `..data/<key>` with `<dir>/..data` -> `..<timestamp>` (so that an update
// swaps every key at once): the file `<dir>/..<timestamp>/<key>` is read,
// opened without following a link and checked as above.
StatusOr<std::string> ReadPrivateFile(const std::string& path,
                                      size_t max_bytes);

// For `path`, a key of such a volume: the file it stands for
// (`<dir>/..<timestamp>/<key>`); "" when `path` is no such key.
std::string ProjectedVolumeFile(const std::string& path);

}  // namespace dtf
