// dtf pack zip: the job archive (docs/pack.md): the job file and the files
// it names that a task reads when it loads the job (vocabulary files), and,
// on request, its data (the CSV files and the records directory). Nothing
// else: no profiles, no run directories, no keys; a named file under a
// .dtf/ or .ssh/ directory is refused.
//
// Entries keep their paths relative to the archive root, the deepest
// directory holding the job file and every packed file, so the job file's
// relative paths resolve the same once unpacked. manifest.json's "entry"
// names the job file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/pack/pack_env.h"

namespace dtf::pack {

inline constexpr char kJobArchivePrefix[] = "job-";

struct PackJobOptions {
  // The job file. Required.
  std::string job;
  // Pack the CSV files (globs expanded) and the files under the records
  // directory too. Default: false; data stays where the job's paths point.
  bool with_data = false;
  // For the manifest. Required.
  std::string dtf_version;
  // Where the archive goes. Default: .dtf/pack.
  std::string out_dir = ".dtf/pack";
};

// Loads the job (LoadJobFile: its errors, "dtf.toml:12:3: ...", come back
// as they are), packs and writes the archive. NotFound "<job>: data.csv:
// no file matches <glob>" with `with_data` for a CSV path matching nothing;
// PermissionDenied for a file under .dtf/ or .ssh/.
StatusOr<PackResult> PackJob(const PackJobOptions& options);

// An archive of the job kind holding chosen files under chosen names (what
// `dtf predict --profile` ships over SSH: the model and, with the data,
// the input files).
struct PackFilesOptions {
  // (entry name, local file) each; entry names relative, unique.
  std::vector<std::pair<std::string, std::string>> files;
  // manifest.json's "entry": what the tasks read first.
  std::string entry;
  bool with_data = false;
  std::string dtf_version;
  std::string out_dir;
  std::string prefix = kJobArchivePrefix;
};

// Packs and writes it. PermissionDenied for a file under .dtf/ or .ssh/
// (named, with `what`), InvalidArgument for an entry name that is not
// relative or is given twice; the file system's errors naming the file.
StatusOr<PackResult> PackFiles(const PackFilesOptions& options,
                               std::string_view what);

}  // namespace dtf::pack
