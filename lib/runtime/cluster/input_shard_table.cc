#include "lib/runtime/cluster/input_shard_table.h"

namespace dtf::runtime {

InputShardTable::InputShardTable(int shards)
    : holders_(size_t(shards > 0 ? shards : 0)),
      touched_(size_t(shards > 0 ? shards : 0), false) {
  for (size_t i = 0; i < holders_.size(); ++i) holders_[i].worker = int(i);
}

int InputShardTable::held(int w) const {
  int n = 0;
  for (const Holder& h : holders_) n += h.worker == w ? 1 : 0;
  return n;
}

void InputShardTable::Orphan(int s) {
  Holder& h = holders_[size_t(s)];
  if (h.worker >= 0 && size_t(h.worker) < touched_.size()) {
    touched_[size_t(h.worker)] = true;
  }
  h.worker = -1;
  h.incarnation = 0;
  h.moved = true;
  h.parked = false;
  h.to = -1;
}

void InputShardTable::Park(int s, const InputPosition& start) {
  Orphan(s);
  holders_[size_t(s)].start = start;
  holders_[size_t(s)].parked = true;
}

std::optional<InputPosition> InputShardTable::Parked(int s) const {
  const Holder& h = holders_[size_t(s)];
  if (h.worker >= 0 || !h.parked) return std::nullopt;
  return h.start;
}

void InputShardTable::Release(int s, int to, uint64_t incarnation) {
  Holder& h = holders_[size_t(s)];
  h.to = to;
  h.to_incarnation = incarnation;
  if (h.worker >= 0 && size_t(h.worker) < touched_.size()) {
    touched_[size_t(h.worker)] = true;
  }
  if (to >= 0 && size_t(to) < touched_.size()) touched_[size_t(to)] = true;
}

bool InputShardTable::Released(int s, int from, const InputPosition& at) {
  if (s < 0 || size_t(s) >= holders_.size()) return false;
  Holder& h = holders_[size_t(s)];
  if (h.to < 0 || h.worker != from) return false;
  Give(s, h.to, h.to_incarnation, at);
  return true;
}

bool InputShardTable::Pending(int w, uint64_t incarnation) const {
  for (const Holder& h : holders_) {
    if (h.to == w && (incarnation == 0 || h.to_incarnation == incarnation)) {
      return true;
    }
  }
  return false;
}

void InputShardTable::Give(int s, int w, uint64_t incarnation,
                           const InputPosition& start) {
  Holder& h = holders_[size_t(s)];
  h.worker = w;
  h.incarnation = incarnation;
  h.start = start;
  ++h.grant;
  h.moved = true;
  h.parked = false;
  h.to = -1;
  if (w >= 0 && size_t(w) < touched_.size()) touched_[size_t(w)] = true;
}

std::optional<std::vector<InputShard>> InputShardTable::Of(
    int w, uint64_t incarnation) const {
  if (w < 0 || size_t(w) >= touched_.size() || !touched_[size_t(w)]) {
    return std::nullopt;
  }
  std::vector<InputShard> of;
  for (size_t s = 0; s < holders_.size(); ++s) {
    const Holder& h = holders_[s];
    if (h.worker != w || h.to >= 0) continue;
    if (h.moved && incarnation != 0 && h.incarnation != incarnation) continue;
    of.push_back({int(s), h.start, h.grant});
  }
  return of;
}

}  // namespace dtf::runtime
