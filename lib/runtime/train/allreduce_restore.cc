#include "lib/runtime/train/allreduce_restore.h"

#include <utility>

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"

namespace dtf::runtime {
namespace {

// Each int64 travels as four 16-bit pieces, floats that hold them exactly.
constexpr size_t kPiecesPerInt = 4;
// A rank's entry: whether its position is recorded, then the position.
constexpr size_t kIntsPerRank = 1 + kInputPositionNumbers;

size_t ResumeInts(size_t num_variables, int num_workers) {
  return 2 + num_variables + kIntsPerRank * size_t(std::max(num_workers, 1));
}

}  // namespace

size_t AllreduceResumeSize(size_t num_variables, int num_workers) {
  return kPiecesPerInt * ResumeInts(num_variables, num_workers);
}

std::vector<float> PackAllreduceResume(const AllreduceResume& resume,
                                       size_t num_variables, int num_workers) {
  std::vector<int64_t> ints;
  ints.reserve(ResumeInts(num_variables, num_workers));
  ints.push_back(resume.restored ? 1 : 0);
  ints.push_back(resume.global_step);
  for (size_t v = 0; v < num_variables; ++v) {
    ints.push_back(v < resume.update_counts.size() ? resume.update_counts[v]
                                                   : 0);
  }
  for (size_t r = 0; r < size_t(std::max(num_workers, 1)); ++r) {
    const std::optional<InputPosition> at =
        r < resume.positions.size() ? resume.positions[r] : std::nullopt;
    const auto numbers = PositionNumbers(at.value_or(InputPosition{}));
    ints.push_back(at ? 1 : 0);
    ints.insert(ints.end(), numbers.begin(), numbers.end());
  }
  std::vector<float> packed;
  packed.reserve(ints.size() * kPiecesPerInt);
  for (int64_t i : ints) {
    const uint64_t bits = uint64_t(i);
    for (size_t k = 0; k < kPiecesPerInt; ++k) {
      packed.push_back(float((bits >> (16 * k)) & 0xffff));
    }
  }
  return packed;
}

StatusOr<AllreduceResume> UnpackAllreduceResume(std::span<const float> packed,
                                                size_t num_variables,
                                                int num_workers) {
  const size_t n = ResumeInts(num_variables, num_workers);
  if (packed.size() != n * kPiecesPerInt) {
    return InternalError(StrCat("the restored state from rank 0 has ",
                                packed.size(), " values; expected ",
                                n * kPiecesPerInt));
  }
  std::vector<int64_t> ints(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    for (size_t k = 0; k < kPiecesPerInt; ++k) {
      const float piece = packed[i * kPiecesPerInt + k];
      if (!(piece >= 0 && piece <= 65535) || piece != float(int(piece))) {
        return InternalError(
            StrCat("the restored state from rank 0 has a malformed value at ",
                   i * kPiecesPerInt + k));
      }
      bits |= uint64_t(piece) << (16 * k);
    }
    ints[i] = int64_t(bits);
  }
  AllreduceResume r;
  size_t at = 0;
  r.restored = ints[at++] != 0;
  r.global_step = ints[at++];
  r.update_counts.assign(ints.begin() + ptrdiff_t(at),
                         ints.begin() + ptrdiff_t(at + num_variables));
  at += num_variables;
  for (int w = 0; w < std::max(num_workers, 1); ++w, at += kIntsPerRank) {
    if (ints[at] == 0) {
      r.positions.emplace_back();
    } else {
      r.positions.push_back(*PositionFromNumbers(std::span<const int64_t>(
          ints.data() + at + 1, kInputPositionNumbers)));
    }
  }
  return r;
}

RankInputStart InputStartFor(const AllreduceResume& resume, int rank) {
  RankInputStart s;
  if (!resume.restored) {
    s.whence = "the start: no checkpoint was restored";
    return s;
  }
  const size_t i = size_t(rank);
  if (i < resume.positions.size() && resume.positions[i]) {
    s.at = *resume.positions[i];
    s.whence = "its recorded position";
    return s;
  }
  s.skip_batches = resume.global_step;
  s.whence = StrCat("its position is not recorded: the start, past the ",
                    resume.global_step, " batches of the restored steps");
  return s;
}

StatusOr<AllreduceResume> RestoreAllreduceChief(
    const JobFile& job, const WorkerOptions& options, const TrainHooks& hooks,
    FeatureLayer* layer, Model* model,
    std::vector<kernels::OptimizerState>* states) {
  const std::string self = TaskName{Role::kWorker, options.index}.ToString();
  std::string why;
  DTF_ASSIGN_OR_RETURN(
      std::optional<Bundle> own,
      FindRunCheckpoint(job.train.output_dir, options.credentials.run_id,
                        CheckpointFingerprint(job), &why));
  AllreduceResume r;
  r.update_counts.assign(model->variables().size(), 0);
  if (!own) {
    hooks.Note(StrCat(self, ": ", why,
                      "; every worker starts from the initial values"));
    return r;
  }
  DTF_ASSIGN_OR_RETURN(const CheckpointInfo info, ReadCheckpointInfo(*own));
  TrainState state;
  DTF_RETURN_IF_ERROR(RestoreCheckpoint(*own, layer, model, states, &state));
  r.restored = true;
  r.global_step = state.global_step;
  for (size_t v = 0; v < states->size() && v < r.update_counts.size(); ++v) {
    r.update_counts[v] = (*states)[v].step();
  }
  r.positions = info.worker_positions;
  if (r.positions.empty()) r.positions.resize(1);
  r.positions[0] = state.position;
  hooks.Note(StrCat(self, ": restored ", own->path(), " at global step ",
                    state.global_step, "; every worker starts from it"));
  return r;
}

}  // namespace dtf::runtime
