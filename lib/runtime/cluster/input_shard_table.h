// Which worker reads each input shard of a parameter-server run (docs/
// launch.md, *Elastic workers*): shard i is worker i's own until the chief
// takes worker i for dead and hands the shard on to a live worker, which
// reads it on from the position committed for it. Not thread-safe: the
// chief's Coordinator holds it under its lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/data/input_position.h"

namespace dtf::runtime {

class InputShardTable {
 public:
  // `shards` shards, shard i held by worker i.
  explicit InputShardTable(int shards = 0);

  int shards() const { return int(holders_.size()); }
  // Shard s's worker; -1 while no live worker reads it.
  int holder(int s) const { return holders_[size_t(s)].worker; }
  // Whether shard s was handed on at least once.
  bool moved(int s) const { return holders_[size_t(s)].moved; }
  // The process of its worker shard s was handed on to (0: its own shard
  // never moved, read by whatever process the worker runs).
  uint64_t incarnation(int s) const { return holders_[size_t(s)].incarnation; }
  // The shards worker w reads.
  int held(int w) const;

  // Shard s's worker was taken for dead: no worker reads it now.
  void Orphan(int s);
  // No live worker could take shard s, orphaned: it waits to be read from
  // `start` by the next live worker that reads none (Parked).
  void Park(int s, const InputPosition& start);
  // Where parked shard s is to be read from; nullopt when it is not
  // parked (held, or orphaned and not handed on yet).
  std::optional<InputPosition> Parked(int s) const;
  // Hands shard s on to process `incarnation` of worker w, to read from
  // `start`, under a grant number of its own (InputShard::grant).
  void Give(int s, int w, uint64_t incarnation, const InputPosition& start);

  // Asks worker `from`, which reads shard s, to release it to process
  // `incarnation` of worker `to` (a live worker that reads none): `from` is
  // told it reads s no more, and once it says where it stopped (Released)
  // the shard is `to`'s from there.
  void Release(int s, int to, uint64_t incarnation);
  // Worker `from` stopped reading shard s at `at`: a release of s from it
  // completes. False when none was asked of it.
  bool Released(int s, int from, const InputPosition& at);
  // Whether a release to process `incarnation` of worker w is under way
  // (0: any process).
  bool Pending(int w, uint64_t incarnation) const;
  // Whether shard s is being released.
  bool releasing(int s) const { return holders_[size_t(s)].to >= 0; }

  // What process `incarnation` of worker w reads (0: whatever process it
  // runs), each shard with its start; nullopt while no shard moved to or
  // from the worker (its own alone, as it started). A shard handed on to
  // another process of the worker is not its: the chief hands it on again
  // (it was lost with that process).
  std::optional<std::vector<InputShard>> Of(int w, uint64_t incarnation) const;

 private:
  struct Holder {
    int worker = -1;
    uint64_t incarnation = 0;
    InputPosition start;
    uint64_t grant = 0;  // Give numbers each handing anew
    bool moved = false;
    bool parked = false;  // Park
    // A release under way: to process `to_incarnation` of worker `to`.
    int to = -1;
    uint64_t to_incarnation = 0;
  };
  std::vector<Holder> holders_;
  std::vector<bool> touched_;  // a shard moved to or from the worker
};

}  // namespace dtf::runtime
