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
// A rank's GPU (devices < 256): a process and its streams' threads of its own.
uint64_t GpuUuid(uint32_t rank, uint32_t device) {
  return (uint64_t{3} << 40) | (uint64_t{rank} << 8) | (device & 0xFF);
}
uint64_t StreamUuid(uint32_t rank, uint32_t device, uint32_t stream) {
  return (uint64_t{4} << 56) | (uint64_t{rank & 0xFFFFF} << 28) | (uint64_t{device & 0xFF} << 20) |
         (stream & 0xFFFFF);
}
int32_t GpuPid(uint32_t rank, uint32_t device) {
  return 10'000'000 + static_cast<int32_t>((rank & 0xFFFF) * 256 + (device & 0xFF));
}

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

uint64_t PerfettoTraceWriter::StreamTrack(uint32_t rank, uint32_t gpu_device, uint32_t stream) {
  if (gpus_.insert({rank, gpu_device}).second) {
    perfetto::TracePacket packet;
    perfetto::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(GpuUuid(rank, gpu_device));
    track->mutable_process()->set_pid(GpuPid(rank, gpu_device));
    track->mutable_process()->set_process_name(absl::StrCat("rank ", rank, " GPU ", gpu_device));
    Write(packet);
    ++tracks_;
  }
  auto [it, added] =
      streams_.try_emplace({rank, gpu_device, stream}, StreamUuid(rank, gpu_device, stream));
  if (added) {
    perfetto::TracePacket packet;
    perfetto::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(it->second);
    track->set_parent_uuid(GpuUuid(rank, gpu_device));
    track->mutable_thread()->set_pid(GpuPid(rank, gpu_device));
    // tids only need to be unique: past every thread tid Pid() * 100000 gives.
    track->mutable_thread()->set_tid(
        1'000'000'000 +
        static_cast<int32_t>(((rank & 0xFFF) * 64 + (gpu_device & 0x3F)) * 1000 + stream % 1000));
    track->mutable_thread()->set_thread_name(absl::StrCat("stream ", stream));
    Write(packet);
    ++tracks_;
  }
  return it->second;
}

uint64_t PerfettoTraceWriter::TrackOf(const v1::AlignedOperator& op) {
  if (IsGpuClass(op.op_class())) return StreamTrack(op.rank(), op.gpu_device(), op.gpu_stream());
  return ThreadTrack(op.rank(), op.thread());
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
  static const std::string* const kUnknownName = new std::string("?");
  // Per thread track, by start (the enclosing one first on a tie).
  std::map<uint64_t, std::vector<const v1::AlignedOperator*>> by_track;
  for (const v1::AlignedOperator& op : batch.operators()) {
    by_track[TrackOf(op)].push_back(&op);
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
      const std::string& name = op->name() < static_cast<uint32_t>(batch.strings_size())
                                    ? batch.strings(static_cast<int>(op->name()))
                                    : *kUnknownName;
      event->add_categories(OperatorCategory(op->op_class(), name));
      event->set_name(name);
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
