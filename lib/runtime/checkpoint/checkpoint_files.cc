#include "lib/runtime/checkpoint/checkpoint_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <memory>
#include <utility>

#include "lib/base/strings.h"
#include "lib/data/job_toml.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"

namespace dtf::runtime {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kGenerationPrefix = "checkpoint-";
constexpr std::string_view kGenerationSuffix = ".dtf";

// The step of a generation's file name; nullopt for any other name
// (checkpoint.dtf, checkpoint-best.dtf, temporary files).
std::optional<int64_t> GenerationStep(std::string_view name) {
  if (!name.starts_with(kGenerationPrefix) ||
      !name.ends_with(kGenerationSuffix)) {
    return std::nullopt;
  }
  name.remove_prefix(kGenerationPrefix.size());
  name.remove_suffix(kGenerationSuffix.size());
  int64_t step = 0;
  auto [end, ec] =
      std::from_chars(name.data(), name.data() + name.size(), step);
  if (name.empty() || ec != std::errc() || end != name.data() + name.size() ||
      step < 0) {
    return std::nullopt;
  }
  return step;
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoToStatus(err, dir);
  return OkStatus();
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string OptionalOptimizer(const std::optional<OptimizerSpec>& spec) {
  return spec ? std::string(OptimizerTypeName(spec->type)) : std::string("-");
}

// The prefix of the newest sharded checkpoint of `dir` when there is one
// and `dtf_file` is absent or older.
std::optional<std::string> NewerShardedCheckpoint(const std::string& dir,
                                                  const std::string& dtf_file) {
  const std::vector<ShardedGeneration> sharded = ListShardedCheckpoints(dir);
  if (sharded.empty()) return std::nullopt;
  std::error_code ec, dtf_ec;
  const auto index_time =
      fs::last_write_time(ShardedIndexPath(sharded[0].prefix), ec);
  const auto dtf_time = fs::last_write_time(dtf_file, dtf_ec);
  if (!dtf_ec && (ec || dtf_time > index_time)) return std::nullopt;
  return sharded[0].prefix;
}

StatusOr<Bundle> ReadShardedState(const std::string& prefix) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardedCheckpointReader> reader,
                       ShardedCheckpointReader::Open(prefix));
  return reader->ReadUnsliced();
}

}  // namespace

std::string CheckpointGenerationName(int64_t step) {
  return StrCat(kGenerationPrefix, step, kGenerationSuffix);
}

std::string CheckpointFingerprint(const JobFile& job) {
  const TrainSpec& t = job.train;
  const std::string text =
      StrCat(job.model ? ModelDefinitionToToml(job) : std::string(),
             "\n[optimizers]\noptimizer=", OptionalOptimizer(t.optimizer),
             "\nwide_optimizer=", OptionalOptimizer(t.wide_optimizer),
             "\ndeep_optimizer=", OptionalOptimizer(t.deep_optimizer), "\n");
  return fmt::format("{:016x}", Fnv1a64(text));
}

StatusOr<CheckpointInfo> ReadCheckpointInfo(const Bundle& bundle) {
  CheckpointInfo info;
  info.path = bundle.path();
  if (bundle.Find(kCheckpointRunIdEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(info.run_id, bundle.GetString(kCheckpointRunIdEntry));
  }
  if (bundle.Find(kCheckpointFingerprintEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(info.job_fingerprint,
                         bundle.GetString(kCheckpointFingerprintEntry));
  }
  DTF_ASSIGN_OR_RETURN(info.global_step, ReadCheckpointStep(bundle, ""));
  if (bundle.Find(kCheckpointPsStepsEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(info.ps_steps,
                         bundle.GetInt64s(kCheckpointPsStepsEntry));
  }
  if (bundle.Find("train/input_position") != nullptr) {
    DTF_ASSIGN_OR_RETURN(std::vector<int64_t> p,
                         bundle.GetInt64s("train/input_position"));
    if (p.size() != 4) {
      return DataLossError(
          StrCat(bundle.path(), ": malformed \"train/input_position\""));
    }
    DTF_ASSIGN_OR_RETURN(
        std::vector<int64_t> emitted,
        ReadCheckpointEmitted(bundle, kCheckpointInputEmittedEntry, 1));
    info.position = InputPosition{p[0], p[1], p[2], p[3], emitted[0]};
  }
  if (bundle.Find(kCheckpointWorkerPositionsEntry) != nullptr) {
    DTF_ASSIGN_OR_RETURN(std::vector<int64_t> w,
                         bundle.GetInt64s(kCheckpointWorkerPositionsEntry));
    auto malformed = [&] {
      return DataLossError(StrCat(bundle.path(), ": malformed \"",
                                  kCheckpointWorkerPositionsEntry, "\""));
    };
    if (w.size() % 4 != 0) return malformed();
    DTF_ASSIGN_OR_RETURN(
        std::vector<int64_t> emitted,
        ReadCheckpointEmitted(bundle, kCheckpointWorkerEmittedEntry,
                              w.size() / 4));
    for (size_t i = 0; i < w.size(); i += 4) {
      const InputPosition q{w[i], w[i + 1], w[i + 2], w[i + 3], emitted[i / 4]};
      if (q.epoch == -1 && q.file == -1 && q.record == -1 &&
          q.epoch_record == -1) {
        info.worker_positions.emplace_back();
        continue;
      }
      if (q.epoch < 0 || q.file < 0 || q.record < 0 || q.epoch_record < 0) {
        return malformed();
      }
      info.worker_positions.emplace_back(q);
    }
  }
  return info;
}

std::vector<CheckpointGeneration> ListCheckpointGenerations(
    const std::string& dir) {
  struct Found {
    CheckpointGeneration generation;
    fs::file_time_type time;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::optional<int64_t> step =
        GenerationStep(it->path().filename().string());
    if (!step || !it->is_regular_file(ec)) continue;
    std::error_code time_ec;
    const fs::file_time_type time = it->last_write_time(time_ec);
    if (time_ec) continue;  // removed meanwhile
    found.push_back({{it->path().string(), *step}, time});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.time != b.time) return a.time > b.time;
    return a.generation.step > b.generation.step;
  });
  std::vector<CheckpointGeneration> out;
  for (Found& f : found) out.push_back(std::move(f.generation));
  return out;
}

Status WriteCheckpointGeneration(const Bundle& bundle, const std::string& dir,
                                 int64_t step, int64_t keep) {
  const fs::path generation = fs::path(dir) / CheckpointGenerationName(step);
  DTF_RETURN_IF_ERROR(bundle.WriteFile(generation.string()));
  // The newest as checkpoint.dtf: a second name for the same durable file,
  // put in place by rename so that a reader sees the old or the new one.
  const fs::path newest = fs::path(dir) / kCheckpointFile;
  const fs::path link =
      fs::path(dir) / StrCat(".", kCheckpointFile, ".link-", ::getpid());
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_hard_link(generation, link, ec);
  if (ec) {
    // A file system without hard links: a copy of its own.
    DTF_RETURN_IF_ERROR(bundle.WriteFile(newest.string()));
  } else {
    fs::rename(link, newest, ec);
    if (ec) {
      fs::remove(link, ec);
      return ErrnoToStatus(ec.value(), StrCat("cannot rename ", link.string(),
                                              " to ", newest.string()));
    }
    DTF_RETURN_IF_ERROR(SyncDir(dir));
  }
  const std::vector<CheckpointGeneration> all = ListCheckpointGenerations(dir);
  const size_t kept = size_t(std::max<int64_t>(keep, 1));
  for (size_t i = kept; i < all.size(); ++i) {
    if (all[i].path == generation.string()) continue;
    fs::remove(all[i].path, ec);
  }
  return OkStatus();
}

StatusOr<std::optional<Bundle>> FindRunCheckpoint(const std::string& dir,
                                                  std::string_view run_id,
                                                  std::string_view fingerprint,
                                                  std::string* why) {
  std::string path = (fs::path(dir) / kCheckpointFile).string();
  std::error_code ec;
  const std::optional<std::string> sharded = NewerShardedCheckpoint(dir, path);
  if (!sharded && !fs::exists(path, ec)) {
    *why = StrCat("no checkpoint at ", path);
    return std::optional<Bundle>();
  }
  if (sharded) path = *sharded;
  StatusOr<Bundle> bundle =
      sharded ? ReadShardedState(*sharded) : Bundle::ReadFile(path);
  if (!bundle.ok()) {
    return DataLossError(StrCat(Message(bundle.status()),
                                "; refusing to restore from it (nothing "
                                "was overwritten)"));
  }
  StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*bundle);
  if (!info.ok()) {
    return DataLossError(StrCat(Message(info.status()),
                                "; refusing to restore from it (nothing "
                                "was overwritten)"));
  }
  if (info->run_id != run_id) {
    *why = StrCat(path, " belongs to ",
                  info->run_id.empty() ? std::string("no launched run")
                                       : StrCat("run ", info->run_id),
                  ", not to run ", run_id, "; not restoring it");
    return std::optional<Bundle>();
  }
  if (info->job_fingerprint != fingerprint) {
    return FailedPreconditionError(StrCat(
        path, ": written by run ", run_id, " for job fingerprint ",
        info->job_fingerprint.empty() ? "(none)" : info->job_fingerprint,
        ", but the job's fingerprint is now ", fingerprint,
        " (its schema, features, model or optimizers changed); refusing to "
        "restore from it"));
  }
  *why = StrCat("restoring from ", path, " (run ", run_id, ", global step ",
                info->global_step, ")");
  return std::optional<Bundle>(*std::move(bundle));
}

}  // namespace dtf::runtime
