// write_events LOGDIR [SUFFIX]
//
// Drives an EventWriter from standard input for tensorboard_events_test.py,
// which then reads the file with TensorBoard. Prints the event file's path,
// then reads commands, one per line:
//   scalar STEP TAG VALUE [TAG VALUE ...]   AddScalar, or AddScalars for more
//   flush                                   Flush, then print "flushed"
// and closes the writer at end of input. Exits 1 with a message on any error.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/event_writer.h"

namespace dtf::runtime {
namespace {

int Fail(const Status& status) {
  std::cerr << "write_events: " << Message(status) << "\n";
  return 1;
}

Status RunCommand(const std::string& line, int line_number,
                  EventWriter* writer) {
  std::istringstream in(line);
  std::string command;
  in >> command;
  if (command.empty()) return OkStatus();
  if (command == "flush") {
    DTF_RETURN_IF_ERROR(writer->Flush());
    std::cout << "flushed" << std::endl;
    return OkStatus();
  }
  const std::string where = StrCat("line ", line_number, " \"", line, "\"");
  if (command != "scalar") {
    return InvalidArgumentError(StrCat(where, ": unknown command"));
  }
  int64_t step = 0;
  if (!(in >> step)) return InvalidArgumentError(StrCat(where, ": no step"));
  std::vector<std::pair<std::string, double>> values;
  std::string tag;
  std::string value;
  while (in >> tag) {
    if (!(in >> value)) {
      return InvalidArgumentError(StrCat(where, ": no value for ", tag));
    }
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') {
      return InvalidArgumentError(StrCat(where, ": bad value ", value));
    }
    values.emplace_back(tag, v);
  }
  if (values.size() == 1) {
    return writer->AddScalar(values[0].first, values[0].second, step);
  }
  return writer->AddScalars(values, step);
}

int Main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: write_events LOGDIR [SUFFIX] < commands\n";
    return 2;
  }
  StatusOr<std::unique_ptr<EventWriter>> writer =
      EventWriter::Create(argv[1], argc == 3 ? argv[2] : "");
  if (!writer.ok()) return Fail(writer.status());
  std::cout << (*writer)->path() << std::endl;
  std::string line;
  for (int n = 1; std::getline(std::cin, line); ++n) {
    Status status = RunCommand(line, n, writer->get());
    if (!status.ok()) return Fail(status);
  }
  Status closed = (*writer)->Close();
  if (!closed.ok()) return Fail(closed);
  return 0;
}

}  // namespace
}  // namespace dtf::runtime

int main(int argc, char** argv) { return dtf::runtime::Main(argc, argv); }
