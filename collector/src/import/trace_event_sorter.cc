#include "trainscope/collector/import/trace_event_sorter.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::collector {
namespace {

// Records read back per run and refill.
constexpr size_t kRunBuffer = 4096;

// A function object, so that std::sort and the heap inline it.
struct EarlierOrder {
  bool operator()(const SortedTraceEvent& a, const SortedTraceEvent& b) const {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    if (a.rank_in_tie != b.rank_in_tie) return a.rank_in_tie < b.rank_in_tie;
    if (a.dur_ns != b.dur_ns) return a.dur_ns > b.dur_ns;
    return a.order < b.order;
  }
};
constexpr EarlierOrder Earlier;

}  // namespace

TraceEventSorter::TraceEventSorter(TraceEventSorterOptions options) : options_(std::move(options)) {
  strings_.emplace_back();
  string_ids_.emplace("", 0);
}

TraceEventSorter::~TraceEventSorter() {
  for (Run& run : runs_) {
    if (run.file != nullptr) std::fclose(run.file);
  }
}

uint32_t TraceEventSorter::Intern(absl::string_view s) {
  auto it = string_ids_.find(s);
  if (it != string_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  string_ids_.emplace(std::string(s), id);
  return id;
}

absl::Status TraceEventSorter::Add(const TraceEvent& e, bool device_work) {
  SortedTraceEvent s;
  s.ts_ns = e.ts_ns;
  s.dur_ns = std::max<int64_t>(e.dur_ns, 0);
  s.pid = e.pid;
  s.tid = e.tid;
  s.order = added_++;
  s.flow_id = e.flow_id;
  s.phase = e.phase;
  s.rank_in_tie = e.phase != TraceEvent::Phase::kComplete ? 0 : device_work ? 2 : 1;
  s.name = Intern(e.name);
  s.cat = Intern(e.cat);
  s.group = e.group.empty() ? 0 : Intern(e.group);
  s.collective_name = e.collective_name.empty() ? 0 : Intern(e.collective_name);
  s.dtype = e.dtype.empty() ? 0 : Intern(e.dtype);
  s.has_correlation = e.correlation.has_value();
  s.correlation = e.correlation.value_or(0);
  s.has_device = e.device.has_value();
  s.device = e.device.value_or(0);
  s.has_stream = e.stream.has_value();
  s.stream = e.stream.value_or(0);
  s.has_bytes = e.bytes.has_value();
  s.bytes = e.bytes.value_or(0);
  s.flops = e.flops;
  s.in_nelems = e.in_nelems;
  s.out_nelems = e.out_nelems;
  s.has_sequence = e.sequence.has_value();
  s.sequence = e.sequence.value_or(0);
  s.has_step = e.step.has_value();
  s.step = e.step.value_or(0);
  const size_t budget = std::max<size_t>(options_.max_events_in_memory, 1);
  // Reserved once the first run fills: growing by doubling would copy, and
  // hold 1.5 runs at the moment of the copy.
  if (held_.size() == held_.capacity() && held_.size() >= budget / 4) held_.reserve(budget);
  held_.push_back(s);
  if (held_.size() >= budget) return Spill();
  return absl::OkStatus();
}

absl::Status TraceEventSorter::Spill() {
  std::sort(held_.begin(), held_.end(), Earlier);
  std::FILE* f = std::tmpfile();
  if (f == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create a temporary file (in /tmp) to sort the trace's events; ",
                     held_.size(), " events were held in memory"));
  }
  const size_t written = std::fwrite(held_.data(), sizeof(SortedTraceEvent), held_.size(), f);
  if (written != held_.size()) {
    std::fclose(f);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot write the trace's sorted events to a temporary file in /tmp (disk full?)"));
  }
  runs_.push_back(Run{f, {}, 0, false});
  held_.clear();  // the capacity stays for the next run
  return absl::OkStatus();
}

absl::Status TraceEventSorter::Finish() {
  finished_ = true;
  if (!runs_.empty()) {
    if (!held_.empty()) {
      if (absl::Status s = Spill(); !s.ok()) return s;
    }
    held_ = {};  // everything is in runs: free the run buffer for the merge
  }
  if (runs_.empty()) std::sort(held_.begin(), held_.end(), Earlier);
  return Rewind();
}

bool TraceEventSorter::Refill(Run& run) {
  run.buffer.resize(kRunBuffer);
  const size_t got = std::fread(run.buffer.data(), sizeof(SortedTraceEvent), kRunBuffer, run.file);
  run.buffer.resize(got);
  run.pos = 0;
  if (got == 0) {
    run.done = true;
    if (std::ferror(run.file)) status_ = absl::DataLossError("cannot read back a sorted run");
  }
  return got > 0;
}

absl::Status TraceEventSorter::Rewind() {
  if (!finished_) return absl::FailedPreconditionError("TraceEventSorter::Rewind before Finish");
  held_pos_ = 0;
  heap_.clear();
  auto later = [&](size_t a, size_t b) {
    return Earlier(runs_[b].buffer[runs_[b].pos], runs_[a].buffer[runs_[a].pos]);
  };
  for (size_t i = 0; i < runs_.size(); ++i) {
    Run& run = runs_[i];
    std::rewind(run.file);
    run.done = false;
    if (Refill(run)) heap_.push_back(i);
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  return status_;
}

const SortedTraceEvent* TraceEventSorter::Next() {
  if (runs_.empty()) return held_pos_ < held_.size() ? &held_[held_pos_++] : nullptr;
  if (heap_.empty() || !status_.ok()) return nullptr;
  auto later = [&](size_t a, size_t b) {
    return Earlier(runs_[b].buffer[runs_[b].pos], runs_[a].buffer[runs_[a].pos]);
  };
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const size_t i = heap_.back();
  Run& run = runs_[i];
  current_ = run.buffer[run.pos++];
  if (run.pos < run.buffer.size() || Refill(run)) {
    std::push_heap(heap_.begin(), heap_.end(), later);
  } else {
    heap_.pop_back();
  }
  return &current_;
}

}  // namespace trainscope::collector
