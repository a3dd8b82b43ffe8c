// Writes a job's aligned operators as Chrome trace JSON (the Trace Event
// Format that chrome://tracing and ui.perfetto.dev open): one process per
// rank, one thread per recording thread, each operator a complete ("X")
// event on the aligned clock, and flow events linking every participant of
// a collective instance (and each send to its receive) to the first one.
// GPU work keeps its streams: each stream is a thread of its rank's process
// of its own ("GPU d stream S", tid kStreamTidBase + d * kMaxStreams + S,
// sorted after the rank's CPU threads), so the rank stays the pid and
// `trainscope import` reads the export back (device and stream also ride
// in args); GPU events carry Kineto's categories, the device, stream and
// correlation, and one collective's NCCL kernels are linked by flows like
// its host calls.
//
// Timestamps are microseconds (with ns precision) after the job's first
// operator: absolute Unix microseconds would lose the nanoseconds in a
// double. The origin is kept in otherData.origin_unix_ns.
//
// Streaming: operators are written as they are added; only the open
// collective instances (for the flows) and the seen ranks are kept.
//
// Usage:
//   ChromeTraceWriter writer(&file, "digits");
//   for (const v1::OperatorBatch& batch : batches) writer.Add(batch);
//   absl::Status done = writer.Finish();  // closes the JSON; stream errors
//
// Threading: not thread-safe; one thread writes.
#ifndef TRAINSCOPE_COLLECTOR_EXPORT_CHROME_TRACE_WRITER_H_
#define TRAINSCOPE_COLLECTOR_EXPORT_CHROME_TRACE_WRITER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class ChromeTraceWriter {
 public:
  static constexpr uint32_t kStreamTidBase = 1'000'000'000;
  static constexpr uint32_t kMaxStreams = 1'000'000;  // per GPU; larger ids wrap
  // Below 2^31 for readers that take tids as int32: GPU d and d + 1000 share tids.

  // The tid of a GPU stream's thread in its rank's process.
  static uint32_t StreamTid(uint32_t gpu_device, uint32_t stream) {
    return kStreamTidBase + (gpu_device % 1000) * kMaxStreams + stream % kMaxStreams;
  }

  ChromeTraceWriter(std::ostream* out, std::string job_id);

  // Operators in any order; the first batch's earliest operator sets the
  // time origin (later earlier ones get negative timestamps, which viewers
  // accept).
  void Add(const v1::OperatorBatch& batch);
  absl::Status Finish();

  uint64_t operators_written() const { return operators_; }
  uint64_t flows_written() const { return flows_; }

 private:
  void Event(const std::string& json);
  std::string Ts(int64_t ns) const;
  // Names the process and thread (pid, tid) on first use.
  void Describe(const v1::AlignedOperator& op, uint32_t pid, uint32_t tid);

  std::ostream* out_;
  const std::string job_id_;
  std::optional<int64_t> origin_ns_;
  bool first_event_ = true;
  bool finished_ = false;
  uint64_t operators_ = 0;
  uint64_t flows_ = 0;
  std::set<uint32_t> processes_;                     // pids named
  std::set<std::pair<uint32_t, uint32_t>> threads_;  // (pid, tid) named
  // (group, sequence, kind) -> the flow's source: (ns, pid, tid).
  std::map<std::tuple<std::string, uint64_t, int>, std::tuple<uint64_t, uint32_t, uint32_t>>
      instances_;
  uint64_t next_flow_id_ = 1;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_EXPORT_CHROME_TRACE_WRITER_H_
