#include "trainscope/collector/export/perfetto_trace_writer.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "operator_category.h"

namespace trainscope::collector {
namespace {

// Track uuids: any unique non-zero numbers; processes and threads apart.
uint64_t ProcessUuid(uint32_t rank) { return (uint64_t{1} << 40) | rank; }
uint64_t ThreadUuid(uint32_t rank, uint32_t thread) {
  return (uint64_t{2} << 40) | (uint64_t{rank} << 20) | (thread & 0xFFFFF);
}
// Perfetto ties tracks to pids and tids; 0 is the kernel's, so ranks start at 1.
int32_t Pid(uint32_t rank) { return static_cast<int32_t>(rank) + 1; }

}  // namespace

PerfettoTraceWriter::PerfettoTraceWriter(std::ostream* out) : out_(out) {}

void PerfettoTraceWriter::Write(const perfetto::TracePacket& packet) {
  // Trace.packet (field 1, length-delimited): the file is one Trace message.
  std::string bytes;
  packet.SerializeToString(&bytes);
  std::string header;
  {
    google::protobuf::io::StringOutputStream stream(&header);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
        1, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    coded.WriteVarint32(static_cast<uint32_t>(bytes.size()));
  }
  *out_ << header << bytes;
}

uint64_t PerfettoTraceWriter::ThreadTrack(uint32_t rank, uint32_t thread) {
  if (processes_.insert(rank).second) {
    perfetto::TracePacket packet;
    perfetto::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(ProcessUuid(rank));
    track->mutable_process()->set_pid(Pid(rank));
    track->mutable_process()->set_process_name(absl::StrCat("rank ", rank));
    Write(packet);
    ++tracks_;
  }
  auto [it, added] = threads_.try_emplace({rank, thread}, ThreadUuid(rank, thread));
  if (added) {
    perfetto::TracePacket packet;
    perfetto::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(it->second);
    track->set_parent_uuid(ProcessUuid(rank));
    track->mutable_thread()->set_pid(Pid(rank));
    track->mutable_thread()->set_tid(Pid(rank) * 100000 + static_cast<int32_t>(thread % 100000));
    track->mutable_thread()->set_thread_name(absl::StrCat("thread ", thread));
    Write(packet);
    ++tracks_;
  }
  return it->second;
}

void PerfettoTraceWriter::End(uint64_t track, int64_t at_ns) {
  perfetto::TracePacket packet;
  packet.set_timestamp(static_cast<uint64_t>(std::max<int64_t>(at_ns, 0)));
  packet.set_trusted_packet_sequence_id(kSequenceId);
  packet.mutable_track_event()->set_type(perfetto::TrackEvent::TYPE_SLICE_END);
  packet.mutable_track_event()->set_track_uuid(track);
  Write(packet);
}

void PerfettoTraceWriter::Add(const v1::OperatorBatch& batch) {
  // Per thread track, by start (the enclosing one first on a tie).
  std::map<uint64_t, std::vector<const v1::AlignedOperator*>> by_track;
  for (const v1::AlignedOperator& op : batch.operators()) {
    by_track[ThreadTrack(op.rank(), op.thread())].push_back(&op);
  }
  for (auto& [track, ops] : by_track) {
    std::sort(ops.begin(), ops.end(), [](const auto* a, const auto* b) {
      return a->start_ns() != b->start_ns() ? a->start_ns() < b->start_ns()
                                            : a->end_ns() > b->end_ns();
    });
    std::vector<int64_t>& open = open_[track];
    for (const v1::AlignedOperator* op : ops) {
      while (!open.empty() && open.back() <= op->start_ns()) {
        End(track, open.back());
        open.pop_back();
      }
      // A slice may not outlive the one around it: clip it (operators that
      // overlap without nesting, e.g. asynchronous collectives).
      const int64_t end = open.empty() ? op->end_ns() : std::min(op->end_ns(), open.back());
      perfetto::TracePacket packet;
      packet.set_timestamp(static_cast<uint64_t>(std::max<int64_t>(op->start_ns(), 0)));
      packet.set_trusted_packet_sequence_id(kSequenceId);
      if (first_packet_) packet.set_sequence_flags(1);  // SEQ_INCREMENTAL_STATE_CLEARED
      first_packet_ = false;
      perfetto::TrackEvent* event = packet.mutable_track_event();
      event->set_type(perfetto::TrackEvent::TYPE_SLICE_BEGIN);
      event->set_track_uuid(track);
      event->add_categories(OperatorCategory(op->op_class()));
      event->set_name(op->name() < static_cast<uint32_t>(batch.strings_size())
                          ? batch.strings(static_cast<int>(op->name()))
                          : std::string("?"));
      Write(packet);
      open.push_back(std::max(end, op->start_ns()));
      ++slices_;
    }
  }
}

absl::Status PerfettoTraceWriter::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  for (auto& [track, open] : open_) {
    while (!open.empty()) {
      End(track, open.back());
      open.pop_back();
    }
  }
  out_->flush();
  if (!*out_) return absl::DataLossError("writing the Perfetto trace failed");
  return absl::OkStatus();
}

}  // namespace trainscope::collector
