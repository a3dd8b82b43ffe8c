#include "trainscope/collector/export/chrome_trace_writer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "operator_category.h"
#include "trainscope/collector/export/json_string.h"

namespace trainscope::collector {
namespace {

// Open collective instances kept for their flows; an instance whose
// participants never all arrive is forgotten past this many.
constexpr size_t kMaxOpenInstances = 1 << 16;

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::ostream* out, std::string job_id)
    : out_(out), job_id_(std::move(job_id)) {
  *out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

std::string ChromeTraceWriter::Ts(int64_t ns) const {
  const int64_t rel = ns - origin_ns_.value_or(0);
  // Exact microseconds with three decimals: no rounding through a double.
  return absl::StrFormat("%s%d.%03d", rel < 0 ? "-" : "", std::abs(rel) / 1000,
                         std::abs(rel) % 1000);
}

void ChromeTraceWriter::Event(const std::string& json) {
  if (!first_event_) *out_ << ",\n";
  first_event_ = false;
  *out_ << json;
}

void ChromeTraceWriter::Add(const v1::OperatorBatch& batch) {
  if (!origin_ns_.has_value() && batch.operators_size() > 0) {
    int64_t earliest = batch.operators(0).start_ns();
    for (const v1::AlignedOperator& op : batch.operators()) {
      earliest = std::min(earliest, op.start_ns());
    }
    origin_ns_ = earliest;
  }
  auto str = [&](uint32_t index) -> const std::string& {
    static const std::string kEmpty;
    return index < static_cast<uint32_t>(batch.strings_size()) ? batch.strings(index) : kEmpty;
  };
  // By rank, then time: what readers (and `trainscope import`) expect.
  std::vector<const v1::AlignedOperator*> sorted;
  sorted.reserve(static_cast<size_t>(batch.operators_size()));
  for (const v1::AlignedOperator& op : batch.operators()) sorted.push_back(&op);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->rank() != b->rank() ? a->rank() < b->rank() : a->start_ns() < b->start_ns();
  });
  for (const v1::AlignedOperator* sorted_op : sorted) {
    const v1::AlignedOperator& op = *sorted_op;
    const uint32_t rank = op.rank();
    const bool gpu = IsGpuClass(op.op_class());
    const uint32_t pid = rank;
    const uint32_t tid = gpu ? StreamTid(op.gpu_device(), op.gpu_stream()) : op.thread();
    Describe(op, pid, tid);
    const std::string ts = Ts(op.start_ns());
    const int64_t dur = std::max<int64_t>(0, op.end_ns() - op.start_ns());
    std::string args = absl::StrFormat(R"("step":%u,"stage":%u)", op.step(), op.stage());
    const bool comm = IsCommunicationClass(op.op_class());
    if (gpu) {
      absl::StrAppend(&args, absl::StrFormat(R"(,"device":%u,"stream":%u,"correlation":%u)",
                                             op.gpu_device(), op.gpu_stream(), op.correlation()));
      if (op.launch_op() != 0)
        absl::StrAppend(&args, R"(,"launched_by":)", JsonString(str(op.launch_op())));
    }
    if (comm) {
      absl::StrAppend(&args, R"(,"group":)", JsonString(str(op.group())),
                      absl::StrFormat(R"(,"sequence":%u,"peer":%d,"bytes":%u)", op.group_sequence(),
                                      op.peer(), op.bytes()));
    }
    Event(absl::StrCat(R"({"ph":"X","name":)", JsonString(str(op.name())), R"(,"cat":")",
                       OperatorCategory(op.op_class(), str(op.name())), "\"",
                       absl::StrFormat(R"(,"pid":%u,"tid":%u,"ts":%s,"dur":%d.%03d,"args":{%s}})",
                                       pid, tid, ts, dur / 1000, dur % 1000, args)));
    ++operators_;
    if (!comm) continue;
    // One flow from the instance's first participant to each other one; a
    // send and its receive share (group, sequence) and the pair of ranks.
    // NCCL kernels pair with NCCL kernels, never with the host's calls.
    const bool p2p =
        op.op_class() == v1::OPERATOR_CLASS_SEND || op.op_class() == v1::OPERATOR_CLASS_RECV;
    const uint32_t low = p2p ? std::min<uint32_t>(rank, static_cast<uint32_t>(op.peer())) : 0;
    const uint32_t high = p2p ? std::max<uint32_t>(rank, static_cast<uint32_t>(op.peer())) : 0;
    const auto key = std::make_tuple(absl::StrCat(str(op.group()), "/", low, "/", high),
                                     op.group_sequence(), p2p ? 1 : (gpu ? 2 : 0));
    auto [it, first] = instances_.try_emplace(key, 0, pid, tid);
    if (first) {
      std::get<0>(it->second) = op.start_ns();  // the source's time, for its "s" events
      if (instances_.size() > kMaxOpenInstances) instances_.clear();
      continue;
    }
    const auto& [source_ns, source_pid, source_tid] = it->second;
    const uint64_t id = next_flow_id_++;
    const std::string name = JsonString(str(op.name()));
    Event(absl::StrCat(
        R"({"ph":"s","id":)", id, R"(,"name":)", name, R"(,"cat":"flow")",
        absl::StrFormat(R"(,"pid":%u,"tid":%u,"ts":%s})", source_pid, source_tid, Ts(source_ns))));
    Event(absl::StrCat(R"({"ph":"f","bp":"e","id":)", id, R"(,"name":)", name, R"(,"cat":"flow")",
                       absl::StrFormat(R"(,"pid":%u,"tid":%u,"ts":%s})", pid, tid, ts)));
    ++flows_;
  }
}

void ChromeTraceWriter::Describe(const v1::AlignedOperator& op, uint32_t pid, uint32_t tid) {
  if (processes_.insert(pid).second) {
    Event(absl::StrFormat(R"({"ph":"M","name":"process_name","pid":%u,"args":{"name":"rank %u"}})",
                          pid, pid));
    Event(absl::StrFormat(
        R"({"ph":"M","name":"process_sort_index","pid":%u,"args":{"sort_index":%u}})", pid, pid));
  }
  if (!threads_.insert({pid, tid}).second) return;
  if (!IsGpuClass(op.op_class())) {
    Event(absl::StrFormat(
        R"({"ph":"M","name":"thread_name","pid":%u,"tid":%u,"args":{"name":"thread %u"}})", pid,
        tid, tid));
    return;
  }
  Event(absl::StrFormat(
      R"({"ph":"M","name":"thread_name","pid":%u,"tid":%u,"args":{"name":"GPU %u stream %u"}})",
      pid, tid, op.gpu_device(), op.gpu_stream()));
  // The streams under the rank's CPU threads, by device and stream.
  Event(absl::StrFormat(
      R"({"ph":"M","name":"thread_sort_index","pid":%u,"tid":%u,"args":{"sort_index":%u}})", pid,
      tid, tid));
}

absl::Status ChromeTraceWriter::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  *out_ << "\n],\"otherData\":{\"job\":" << JsonString(job_id_)
        << ",\"exporter\":\"trainscope\",\"clock\":\"aligned reference clock\",\"origin_unix_ns\":"
        << origin_ns_.value_or(0) << "}}\n";
  out_->flush();
  if (!*out_) return absl::DataLossError("writing the Chrome trace failed");
  return absl::OkStatus();
}

}  // namespace trainscope::collector
