// Writes TensorBoard event files (docs/formats/events.md): scalar summaries
// that `tensorboard --logdir` plots while training runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/record_writer.h"

namespace dtf::runtime {

// One event file, <dir>/events.out.tfevents.<10-digit unix seconds>.<hostname>
// <suffix>: an uncompressed TFRecord file of tensorflow.Event protos whose
// first record is Event{wall_time, step 0, file_version "brain.Event:2"}.
// Events carry the wall time at which they were added. Not thread-safe.
class EventWriter {
 public:
  // The file_version of the first event.
  static constexpr std::string_view kFileVersion = "brain.Event:2";

  // Creates `dir` (and its parents) if needed and the event file in it.
  // AlreadyExists when a file of that name is there already (another writer
  // in the same second with the same suffix: give each its own suffix).
  // Other errors name the directory or file.
  static StatusOr<std::unique_ptr<EventWriter>> Create(
      const std::string& dir, std::string_view suffix = "");
  // Closes the file if Close() was not called, ignoring errors.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Appends one event holding one scalar. The value is stored as a float,
  // TensorBoard's simple_value. InvalidArgument for an empty tag.
  Status AddScalar(std::string_view tag, double value, int64_t step);
  // Appends one event holding every value, in order. InvalidArgument for an
  // empty list or an empty tag.
  Status AddScalars(const std::vector<std::pair<std::string, double>>& values,
                    int64_t step);
  // Hands every event added so far to the OS, so that a running TensorBoard
  // sees it.
  Status Flush();
  // Flushes and closes the file; later calls return the same result and
  // adding fails with FailedPrecondition.
  Status Close();

  // The event file.
  const std::string& path() const { return path_; }

 private:
  EventWriter(std::string path, std::unique_ptr<RecordWriter> records);
  Status CheckOpen() const;
  Status WriteEvent(const std::string& serialized);

  std::string path_;
  std::unique_ptr<RecordWriter> records_;
  bool closed_ = false;
};

}  // namespace dtf::runtime
