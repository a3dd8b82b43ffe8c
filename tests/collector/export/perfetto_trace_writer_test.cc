#include "trainscope/collector/export/perfetto_trace_writer.h"

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "export_test_batch.h"
#include "gtest/gtest.h"
#include "trainscope/perfetto/trace.pb.h"

namespace trainscope::collector {
namespace {

// The file parsed back with our own schema: a Trace of packets.
perfetto::Trace Written(const v1::OperatorBatch& batch) {
  std::ostringstream out;
  PerfettoTraceWriter writer(&out);
  writer.Add(batch);
  EXPECT_TRUE(writer.Finish().ok());
  perfetto::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(out.str()));
  return trace;
}

TEST(PerfettoTraceWriterTest, TracksPerRankAndThreadAndOneSlicePerOperator) {
  const perfetto::Trace trace = Written(ExportTestBatch());
  int processes = 0, threads = 0, begins = 0, ends = 0;
  std::map<uint64_t, uint64_t> parent_of;
  for (const perfetto::TracePacket& p : trace.packet()) {
    if (p.has_track_descriptor()) {
      const perfetto::TrackDescriptor& t = p.track_descriptor();
      if (t.has_process()) ++processes;
      if (t.has_thread()) {
        ++threads;
        parent_of[t.uuid()] = t.parent_uuid();
        EXPECT_GT(t.thread().pid(), 0);
      }
    }
    if (p.has_track_event()) {
      EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
      EXPECT_TRUE(parent_of.count(p.track_event().track_uuid()))
          << "an event on a track not described before it";
      if (p.track_event().type() == perfetto::TrackEvent::TYPE_SLICE_BEGIN) {
        ++begins;
        EXPECT_FALSE(p.track_event().name().empty());
        EXPECT_EQ(p.track_event().categories_size(), 1);
      }
      if (p.track_event().type() == perfetto::TrackEvent::TYPE_SLICE_END) ++ends;
    }
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(threads, 2);
  EXPECT_EQ(begins, 7);
  EXPECT_EQ(ends, 7);
  for (const perfetto::TracePacket& p : trace.packet()) {
    if (!p.has_track_event()) continue;
    EXPECT_EQ(p.sequence_flags(), 1u) << "the sequence's first event clears its state";
    break;
  }
}

TEST(PerfettoTraceWriterTest, SlicesNestPerTrackInTimeOrder) {
  const perfetto::Trace trace = Written(ExportTestBatch());
  std::map<uint64_t, std::vector<uint64_t>> stacks;  // per track: open begin times
  std::map<uint64_t, uint64_t> last;                 // per track: last timestamp
  for (const perfetto::TracePacket& p : trace.packet()) {
    if (!p.has_track_event()) continue;
    const uint64_t track = p.track_event().track_uuid();
    EXPECT_GE(p.timestamp(), last[track]) << "time goes back on a track";
    last[track] = p.timestamp();
    if (p.track_event().type() == perfetto::TrackEvent::TYPE_SLICE_BEGIN) {
      stacks[track].push_back(p.timestamp());
    } else {
      ASSERT_FALSE(stacks[track].empty()) << "an end without a begin";
      stacks[track].pop_back();
    }
  }
  for (const auto& [track, stack] : stacks) EXPECT_TRUE(stack.empty());
}

TEST(PerfettoTraceWriterTest, OverlappingOperatorsAreClippedIntoTheirParent) {
  v1::OperatorBatch batch;
  batch.add_strings("a");
  for (const auto& [start, end] : {std::pair<int64_t, int64_t>{100, 300}, {200, 500}}) {
    v1::AlignedOperator* op = batch.add_operators();
    op->set_start_ns(start);
    op->set_end_ns(end);
    op->set_op_class(v1::OPERATOR_CLASS_COLLECTIVE);
  }
  const perfetto::Trace trace = Written(batch);
  std::vector<uint64_t> ends;
  for (const perfetto::TracePacket& p : trace.packet()) {
    if (p.has_track_event() && p.track_event().type() == perfetto::TrackEvent::TYPE_SLICE_END) {
      ends.push_back(p.timestamp());
    }
  }
  EXPECT_EQ(ends, (std::vector<uint64_t>{300, 300}));
}

TEST(PerfettoTraceWriterTest, GpuStreamsAreThreadTracksOfAProcessPerDevice) {
  const perfetto::Trace trace = Written(ExportGpuTestBatch());
  std::map<uint64_t, std::string> process_names;                 // uuid -> name
  std::map<uint64_t, std::pair<uint64_t, std::string>> threads;  // uuid -> (parent, name)
  std::map<std::string, std::set<uint64_t>> tracks_of;           // slice name -> tracks
  std::map<std::string, std::string> category;
  std::set<int32_t> tids;
  for (const perfetto::TracePacket& p : trace.packet()) {
    if (p.has_track_descriptor()) {
      const perfetto::TrackDescriptor& t = p.track_descriptor();
      if (t.has_process()) process_names[t.uuid()] = t.process().process_name();
      if (t.has_thread()) {
        threads[t.uuid()] = {t.parent_uuid(), t.thread().thread_name()};
        EXPECT_TRUE(tids.insert(t.thread().tid()).second) << "tids must be unique";
      }
    }
    if (p.has_track_event() && p.track_event().type() == perfetto::TrackEvent::TYPE_SLICE_BEGIN) {
      tracks_of[p.track_event().name()].insert(p.track_event().track_uuid());
      category[p.track_event().name()] = p.track_event().categories(0);
    }
  }
  std::set<std::string> names;
  for (const auto& [uuid, name] : process_names) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"rank 0", "rank 0 GPU 0", "rank 1 GPU 1"}));
  EXPECT_EQ(threads.size(), 6u);  // rank 0's thread and five streams
  // The two NCCL kernels sit on two stream tracks of two GPU processes.
  ASSERT_EQ(tracks_of["ncclDevKernel_AllReduce_Sum_f32"].size(), 2u);
  std::set<std::string> where;
  for (uint64_t track : tracks_of["ncclDevKernel_AllReduce_Sum_f32"]) {
    const auto& [parent, name] = threads.at(track);
    where.insert(process_names.at(parent) + " / " + name);
  }
  EXPECT_EQ(where, (std::set<std::string>{"rank 0 GPU 0 / stream 20", "rank 1 GPU 1 / stream 24"}));
  // The kernel and the NCCL kernel overlap on rank 0 but on separate
  // tracks, so neither is clipped into the other.
  EXPECT_NE(*tracks_of["sm90_xmma_gemm"].begin(),
            *tracks_of["ncclDevKernel_AllReduce_Sum_f32"].begin());
  EXPECT_EQ(category["Memset (Device)"], "gpu_memset");
  EXPECT_EQ(category["sm90_xmma_gemm"], "kernel");
  EXPECT_EQ(category["aten::mm"], "compute");
}

}  // namespace
}  // namespace trainscope::collector
