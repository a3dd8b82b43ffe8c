// Puts one trace file's events in time order with bounded memory. Kineto
// writes a file's events grouped by source (CPU operators, then device
// activity, launches after the kernels they launched, seconds apart), and
// everything an import links (a launch to its kernel, an operator to the
// launches inside it, a step to its operators) needs time order.
//
// Events are held compactly (names interned in a table that grows with the
// distinct names only); when more than `max_events_in_memory` have been
// added, the held ones are sorted and spilled to a temporary file as a run,
// and the sorted events are read back by merging the runs. Order: time,
// then flow events, then CPU events (a parent before its children: longer
// first), then device events; ties keep the file's order.
//
// Usage:
//   TraceEventSorter sorter({.max_events_in_memory = 1 << 18});
//   while (reader.Next(&e)) RETURN_IF_ERROR(sorter.Add(e));
//   RETURN_IF_ERROR(sorter.Finish());
//   for (int pass = 0; pass < 2; ++pass) {  // as often as needed
//     RETURN_IF_ERROR(sorter.Rewind());
//     const SortedTraceEvent* e;
//     while ((e = sorter.Next()) != nullptr) { ... sorter.str(e->name) ... }
//     RETURN_IF_ERROR(sorter.status());
//   }
//
// Threading: not thread-safe; one thread adds and reads.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_SORTER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_SORTER_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/collector/import/chrome_trace_reader.h"

namespace trainscope::collector {

// A TraceEvent with its strings as ids into the sorter's table (0: "").
struct SortedTraceEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  uint64_t order = 0;  // position in the file: ties keep it
  uint64_t flow_id = 0;
  uint64_t correlation = 0;
  uint64_t bytes = 0;
  uint64_t flops = 0;
  uint64_t in_nelems = 0;
  uint64_t out_nelems = 0;
  uint64_t sequence = 0;
  uint64_t step = 0;
  int64_t device = 0;
  int64_t stream = 0;
  uint32_t name = 0;
  uint32_t cat = 0;
  uint32_t group = 0;
  uint32_t collective_name = 0;
  uint32_t dtype = 0;
  TraceEvent::Phase phase = TraceEvent::Phase::kComplete;
  uint8_t rank_in_tie = 0;  // 0 flow, 1 CPU, 2 device: see the order above
  // Which optional args the event had.
  bool has_correlation = false;
  bool has_device = false;
  bool has_stream = false;
  bool has_bytes = false;
  bool has_sequence = false;
  bool has_step = false;

  int64_t end_ns() const { return ts_ns + dur_ns; }
};

struct TraceEventSorterOptions {
  // About 200 bytes each; runs go to tmpfile() (/tmp), deleted on close.
  size_t max_events_in_memory = size_t{1} << 18;
};

class TraceEventSorter {
 public:
  explicit TraceEventSorter(TraceEventSorterOptions options = {});
  ~TraceEventSorter();
  TraceEventSorter(const TraceEventSorter&) = delete;
  TraceEventSorter& operator=(const TraceEventSorter&) = delete;

  // `device_work` puts the event after CPU events of the same time.
  absl::Status Add(const TraceEvent& event, bool device_work);
  // No more events; sorts what is held.
  absl::Status Finish();
  // Reading starts (again) at the earliest event.
  absl::Status Rewind();
  // The next event in time order, valid until the next call; null at the
  // end or on a read error (see status()).
  const SortedTraceEvent* Next();
  absl::Status status() const { return status_; }

  const std::string& str(uint32_t id) const { return strings_[id]; }
  // The table id of `s`, added if new (ids stay valid and strings stay put).
  uint32_t Intern(absl::string_view s);

  uint64_t events() const { return added_; }
  size_t runs_spilled() const { return runs_.size(); }

 private:
  struct Run {
    std::FILE* file = nullptr;
    std::vector<SortedTraceEvent> buffer;
    size_t pos = 0;
    bool done = false;
  };
  absl::Status Spill();
  bool Refill(Run& run);

  const TraceEventSorterOptions options_;
  std::deque<std::string> strings_;  // a deque: references stay valid as it grows
  absl::flat_hash_map<std::string, uint32_t> string_ids_;
  std::vector<SortedTraceEvent> held_;
  std::vector<Run> runs_;
  std::vector<size_t> heap_;  // run indices, earliest head on top
  size_t held_pos_ = 0;
  uint64_t added_ = 0;
  bool finished_ = false;
  SortedTraceEvent current_;
  absl::Status status_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_TRACE_EVENT_SORTER_H_
