#include "lib/runtime/checkpoint/event_writer.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "fmt/format.h"
#include "lib/base/strings.h"
#include "proto/event.pb.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;

StatusOr<std::string> Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return ErrnoToStatus(errno, "gethostname");
  }
  return std::string(name);
}

// Seconds since the Unix epoch, to the microsecond.
double WallTime() {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<double>(duration_cast<microseconds>(since_epoch).count()) /
         1e6;
}

}  // namespace

StatusOr<std::unique_ptr<EventWriter>> EventWriter::Create(
    const std::string& dir, std::string_view suffix) {
  if (dir.empty()) {
    return InvalidArgumentError("event writer: the log directory is empty");
  }
  if (suffix.find('/') != std::string_view::npos) {
    return InvalidArgumentError(
        StrCat("event file suffix \"", suffix, "\" must not contain '/'"));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create event directory ", dir));
  }
  DTF_ASSIGN_OR_RETURN(std::string host, Hostname());
  const double now = WallTime();
  const std::string path =
      (fs::path(dir) / fmt::format("events.out.tfevents.{:010d}.{}{}",
                                   static_cast<int64_t>(now), host, suffix))
          .string();
  if (fs::exists(path, ec)) {
    return AlreadyExistsError(
        StrCat(path, ": event file already exists (two writers started in ",
               "the same second? give each its own suffix)"));
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> records,
                       RecordWriter::Open(path));
  std::unique_ptr<EventWriter> writer(
      new EventWriter(path, std::move(records)));

  tensorflow::Event event;
  event.set_wall_time(now);
  event.set_step(0);
  event.set_file_version(std::string(kFileVersion));
  DTF_RETURN_IF_ERROR(writer->WriteEvent(event.SerializeAsString()));
  // TensorBoard sees the run as soon as the file exists.
  DTF_RETURN_IF_ERROR(writer->Flush());
  return writer;
}

EventWriter::EventWriter(std::string path,
                         std::unique_ptr<RecordWriter> records)
    : path_(std::move(path)), records_(std::move(records)) {}

EventWriter::~EventWriter() {
  if (!closed_) Close().IgnoreError();
}

Status EventWriter::CheckOpen() const {
  if (closed_) {
    return FailedPreconditionError(StrCat(path_, ": event writer is closed"));
  }
  return OkStatus();
}

Status EventWriter::WriteEvent(const std::string& serialized) {
  DTF_RETURN_IF_ERROR(CheckOpen());
  return records_->WriteRecord(serialized);
}

Status EventWriter::AddScalar(std::string_view tag, double value,
                              int64_t step) {
  return AddScalars({{std::string(tag), value}}, step);
}

Status EventWriter::AddScalars(
    const std::vector<std::pair<std::string, double>>& values, int64_t step) {
  DTF_RETURN_IF_ERROR(CheckOpen());
  if (values.empty()) {
    return InvalidArgumentError(
        StrCat(path_, ": no scalars to add at step ", step));
  }
  tensorflow::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  tensorflow::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    if (tag.empty()) {
      return InvalidArgumentError(
          StrCat(path_, ": scalar with an empty tag at step ", step));
    }
    tensorflow::SummaryValue* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteEvent(event.SerializeAsString());
}

Status EventWriter::Flush() {
  DTF_RETURN_IF_ERROR(CheckOpen());
  return records_->Flush();
}

Status EventWriter::Close() {
  closed_ = true;
  // RecordWriter::Close returns its first result again on later calls.
  return records_->Close();
}

}  // namespace dtf::runtime
