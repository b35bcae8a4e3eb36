// Run ids and run secrets.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::launch {

// "YYYYMMDD-HHMMSS-xxxx": `when` in local time and `suffix` as 4 hex digits.
// Ids sort by start time (to the second).
std::string FormatRunId(std::time_t when, uint16_t suffix);
// A new id for a run starting now, its suffix from /dev/urandom.
StatusOr<std::string> NewRunId();
// Whether `s` has the form FormatRunId gives.
bool LooksLikeRunId(std::string_view s);

// `bytes` random bytes from /dev/urandom, as lowercase hex.
StatusOr<std::string> RandomHex(size_t bytes);
// A new secret (32 random bytes, hex) written to `path` with mode 0600;
// AlreadyExists when `path` exists. The secret never leaves that file.
Status WriteNewSecret(const std::string& path);
// Writes `contents` to `path` with mode 0600 (a run's S3 credentials),
// replacing any file there; the bytes never sit in a file of a wider mode.
Status WritePrivateRunFile(const std::string& path, std::string_view contents);

// Creates <runs_dir>/<id> (and runs_dir when missing) for a new id, or for
// `wanted` unless it is kUnchosenRunId (lib/launch/plan.h); returns the id.
StatusOr<std::string> CreateRunDir(const std::string& runs_dir,
                                   const std::string& wanted);

// For a resumed run: <runs_dir>/<id> must exist (NotFound naming it); what
// its last attempt left that a new one must not read is removed — the
// secret, the TLS directory, stop.json, and each task directory's ready and
// exit.json. Logs
// stay (a resumed task appends to them).
Status ReopenRunDir(const std::string& runs_dir, const std::string& id);

// The run directory a backend places a run in: ReopenRunDir for `wanted`
// when `resume`, else CreateRunDir; returns the run id.
StatusOr<std::string> ClaimRunDir(const std::string& runs_dir,
                                  const std::string& wanted, bool resume);

}  // namespace dtf::launch
