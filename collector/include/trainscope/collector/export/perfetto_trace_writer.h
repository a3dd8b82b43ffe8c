// Writes a job's aligned operators as a Perfetto protobuf trace
// (ui.perfetto.dev, trace_processor), with our own small schema of
// Perfetto's packets (proto/trainscope/perfetto/trace.proto): a process
// track per rank, a thread track per recording thread, each operator a
// slice (begin and end track events) on the aligned clock, categories
// compute / collective / send / recv. GPU work keeps its streams: each of a
// rank's GPUs is a process track of its own ("rank R GPU d") with one thread
// track per stream ("stream S"), categories kernel / gpu_memcpy / gpu_memset.
//
// Streaming: each packet is written as soon as it is known (the file is a
// Trace message, one length-delimited `packet` field after another). Slices
// must nest per track, so each batch's operators are sorted per track and
// ends are held on a per-track stack until a later operator starts past them.
//
// Usage:
//   PerfettoTraceWriter writer(&file);
//   for (const v1::OperatorBatch& batch : batches) writer.Add(batch);
//   absl::Status done = writer.Finish();
//
// Threading: not thread-safe; one thread writes.
#ifndef TRAINSCOPE_COLLECTOR_EXPORT_PERFETTO_TRACE_WRITER_H_
#define TRAINSCOPE_COLLECTOR_EXPORT_PERFETTO_TRACE_WRITER_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainscope/perfetto/trace.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class PerfettoTraceWriter {
 public:
  explicit PerfettoTraceWriter(std::ostream* out);

  void Add(const v1::OperatorBatch& batch);
  // Ends every open slice, flushes; DATA_LOSS when the stream failed.
  absl::Status Finish();

  uint64_t slices_written() const { return slices_; }
  uint64_t tracks_written() const { return tracks_; }

 private:
  static constexpr uint32_t kSequenceId = 1;
  void Write(const perfetto::TracePacket& packet);
  uint64_t ThreadTrack(uint32_t rank, uint32_t thread);
  uint64_t StreamTrack(uint32_t rank, uint32_t gpu_device, uint32_t stream);
  // The operator's track: its thread's, or its GPU stream's.
  uint64_t TrackOf(const v1::AlignedOperator& op);
  void End(uint64_t track, int64_t at_ns);

  std::ostream* out_;
  bool first_packet_ = true;
  bool finished_ = false;
  uint64_t slices_ = 0;
  uint64_t tracks_ = 0;
  std::set<uint32_t> processes_;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> threads_;
  std::set<std::pair<uint32_t, uint32_t>> gpus_;  // (rank, device) process tracks written
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint64_t> streams_;
  // Per thread track: the ends of the slices still open, innermost last.
  std::map<uint64_t, std::vector<int64_t>> open_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_EXPORT_PERFETTO_TRACE_WRITER_H_
