// Reads a Chrome trace JSON file (what torch.profiler's export_chrome_trace
// and Kineto's tensorboard_trace_handler write, plain or gzipped) as a
// stream of events with bounded memory: the file is read in chunks and only
// one event is held at a time, so a 2 GB trace needs megabytes, not
// gigabytes.
//
// Accepted shapes: a top-level array of events (torch's legacy profiler) or
// an object with "traceEvents" (Kineto). The object's other members are
// read wherever they are, before or after the events (AMD's and other
// writers put some after): "distributedInfo" (rank, world size, and a host
// name when it has one), "deviceProperties" (the GPUs), "host_name" /
// "hostname". metadata() is complete once Next() has returned false.
// Complete events ("ph": "X") and the flow events that link a CPU launch to
// its device work ("ph": "s"/"f" of cat "ac2g" or "async_cpu_to_gpu") are
// delivered; other phases are counted as skipped. Malformed or truncated
// input stops the read with an error that names the file, the byte offset
// and what was expected; every event before it has been delivered.
//
// Usage (pull: several readers can be merged by time):
//   ChromeTraceReader reader("rank0.json.gz");
//   TraceEvent e;
//   while (true) {
//     absl::StatusOr<bool> got = reader.Next(&e);  // false: the end
//     if (!got.ok() || !*got) break;
//   }
//   reader.metadata().rank;  // from distributedInfo, once the events are read
//
// Threading: not thread-safe; one thread reads.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_CHROME_TRACE_READER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_CHROME_TRACE_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace trainscope::collector {

// One complete or flow event, as much of it as an import uses.
struct TraceEvent {
  enum class Phase : uint8_t { kComplete, kFlowStart, kFlowEnd };
  Phase phase = Phase::kComplete;
  std::string name;
  std::string cat;
  double ts_us = 0;  // microseconds, as the file has them
  double dur_us = 0;
  // The same, exactly in nanoseconds: a double holds Unix microseconds only
  // to a quarter microsecond, and Kineto writes nanosecond fractions.
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t pid = 0;  // numeric pid; 0 when the file names it ("CPU functions")
  int64_t tid = 0;
  uint64_t flow_id = 0;  // flow events: "id"
  // args a collective may carry: trainscope's own export ("group",
  // "sequence") or Kineto's record_param_comms ("Collective name",
  // "Process Group Name").
  std::string group;
  std::optional<uint64_t> sequence;
  std::optional<uint64_t> step;  // trainscope's export: the operator's step
  std::string collective_name;
  // Kineto's device work and launches.
  std::optional<uint64_t> correlation;  // "correlation"
  std::optional<int64_t> device;        // "device"
  std::optional<int64_t> stream;        // "stream" (numeric only: runtime calls write "0x0")
  std::optional<uint64_t> bytes;        // "bytes" of a copy or memset
  // "flops" of an operator (with_flops), else computed from its "Input Dims"
  // (record_shapes) for the matrix products trainscope::ops knows.
  uint64_t flops = 0;
  uint64_t in_nelems = 0;               // record_param_comms: "In msg nelems"
  uint64_t out_nelems = 0;
  std::vector<std::vector<int64_t>> input_dims;  // "Input Dims", until flops are derived              // ... "Out msg nelems"
  std::string dtype;                    // ... "dtype"
};

// One GPU of "deviceProperties".
struct TraceGpu {
  uint32_t id = 0;
  std::string name;
  uint64_t total_memory = 0;     // totalGlobalMem
  uint32_t multiprocessors = 0;  // numSms
  int compute_major = -1;
  int compute_minor = -1;
};

// What a trace says about its process beside the events.
struct TraceMetadata {
  std::optional<uint32_t> rank;        // distributedInfo.rank
  std::optional<uint32_t> world_size;  // distributedInfo.world_size
  std::string host;                    // host_name / hostname, top level or in distributedInfo
  std::vector<TraceGpu> gpus;          // deviceProperties
};

class ChromeTraceReader {
 public:
  explicit ChromeTraceReader(std::string path);
  ~ChromeTraceReader();

  // The next complete event (true), or the end of the events (false).
  absl::StatusOr<bool> Next(TraceEvent* event);

  const std::string& path() const { return path_; }
  std::optional<uint32_t> rank() const { return metadata_.rank; }
  const TraceMetadata& metadata() const { return metadata_; }
  uint64_t events() const { return events_; }
  uint64_t skipped() const { return skipped_; }
  uint64_t bytes() const { return consumed_ + pos_; }

 private:
  // Low-level JSON on the buffered, refilled input.
  bool Fill();
  int Peek();  // next non-space byte, -1 at the end
  absl::Status Expect(char c, const char* what);
  absl::Status ParseString(std::string* out);
  absl::Status ParseNumber(double* out);
  // A number of microseconds, also exactly in nanoseconds.
  absl::Status ParseMicros(double* us, int64_t* ns);
  absl::Status ParseUnsigned(uint64_t* out);
  absl::Status SkipValue(int depth = 0);
  // Reads `{"key": value, ...}`; on_member(key) reads each value.
  template <typename OnMember>
  absl::Status ParseMembers(const char* what, OnMember on_member);
  absl::Status ParseEvent(TraceEvent* event, bool* complete);
  absl::Status ParseArgs(TraceEvent* event);
  // "Input Dims": one shape per input; an input that is not a plain shape
  // (a scalar's [], a tensor list's nested lists) is kept as an empty one.
  absl::Status ParseInputDims(std::vector<std::vector<int64_t>>* dims);
  // Opens the file and reads up to the first event.
  absl::Status Start();
  // After the events' ']': the rest of the top-level object.
  absl::Status Finish();
  // A top-level member other than the events (distributedInfo, ...).
  absl::Status ParseTopLevel(const std::string& key);
  absl::Status ParseDistributedInfo();
  absl::Status ParseDeviceProperties();
  absl::Status Error(const std::string& expected) const;

  const std::string path_;
  void* file_ = nullptr;  // gzFile (reads plain files too)
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t consumed_ = 0;  // bytes before buffer_[0]
  bool eof_ = false;
  TraceMetadata metadata_;
  std::string number_;  // ParseNumber's text, kept to save allocations
  enum class State { kNew, kFirstEvent, kMoreEvents, kDone } state_ = State::kNew;
  bool in_object_ = false;  // the events are inside {"traceEvents": [...]}
  uint64_t events_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_CHROME_TRACE_READER_H_
