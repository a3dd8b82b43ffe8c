// dump_log_events JOB_DIR: prints the events of a job's durable log, one JSON
// array a line, for the Python tests (conftest.py's Collector.events):
//   [rank, kind, name, start_ns, end_ns, value, detail, thread, group,
//    group_sequence, peer]
// kind and detail are trainscope.v1 enum values. Exit status 1 with the
// reason on stderr when the log cannot be read.
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "log_dump.h"

namespace {

// A JSON string literal; names are UTF-8 already (the agent replaces invalid
// bytes), so only quotes, backslashes and control characters are escaped.
std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_log_events JOB_DIR\n");
    return 2;
  }
  absl::StatusOr<std::vector<trainscope::testing::LoggedEvent>> events =
      trainscope::testing::ReadLoggedEvents(argv[1]);
  if (!events.ok()) {
    std::fprintf(stderr, "dump_log_events: %s\n", std::string(events.status().message()).c_str());
    return 1;
  }
  std::string line;
  for (const trainscope::testing::LoggedEvent& e : *events) {
    const trainscope::agent::DecodedEvent& d = e.event;
    line = absl::StrCat("[", e.rank, ",", static_cast<int>(d.kind), ",", JsonString(d.name), ",",
                        d.start_ns, ",", d.end_ns, ",", d.value, ",", d.detail, ",", d.thread, ",",
                        JsonString(d.group), ",", d.group_sequence, ",", d.peer, "]\n");
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
