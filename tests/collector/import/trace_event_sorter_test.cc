#include "trainscope/collector/import/trace_event_sorter.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

TraceEvent Event(int64_t ts, int64_t dur, const std::string& name) {
  TraceEvent e;
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.name = name;
  e.cat = "cpu_op";
  return e;
}

std::vector<SortedTraceEvent> ReadAll(TraceEventSorter& sorter) {
  std::vector<SortedTraceEvent> out;
  EXPECT_TRUE(sorter.Rewind().ok());
  while (const SortedTraceEvent* e = sorter.Next()) out.push_back(*e);
  EXPECT_TRUE(sorter.status().ok()) << sorter.status();
  return out;
}

TEST(TraceEventSorterTest, TimeThenFlowsCpuDeviceThenParentsFirstThenFileOrder) {
  TraceEventSorter sorter;
  ASSERT_TRUE(sorter.Add(Event(20, 5, "kernel"), /*device_work=*/true).ok());
  ASSERT_TRUE(sorter.Add(Event(20, 1, "launch"), false).ok());
  ASSERT_TRUE(sorter.Add(Event(10, 2, "child"), false).ok());
  ASSERT_TRUE(sorter.Add(Event(10, 50, "parent"), false).ok());
  TraceEvent flow = Event(20, 0, "ac2g");
  flow.phase = TraceEvent::Phase::kFlowEnd;
  ASSERT_TRUE(sorter.Add(flow, false).ok());
  ASSERT_TRUE(sorter.Add(Event(10, 2, "sibling"), false).ok());
  ASSERT_TRUE(sorter.Finish().ok());
  std::vector<std::string> names;
  for (const SortedTraceEvent& e : ReadAll(sorter)) names.push_back(sorter.str(e.name));
  EXPECT_EQ(names,
            (std::vector<std::string>{"parent", "child", "sibling", "ac2g", "launch", "kernel"}));
  EXPECT_EQ(sorter.runs_spilled(), 0u);
}

TEST(TraceEventSorterTest, SpilledRunsMergeToTheSameOrderAndRewind) {
  std::mt19937 random(7);
  std::vector<TraceEvent> events;
  for (int i = 0; i < 5000; ++i) {
    TraceEvent e = Event(random() % 1000, random() % 50, "op" + std::to_string(i % 13));
    e.correlation = i;
    events.push_back(e);
  }
  TraceEventSorter memory({.max_events_in_memory = 1 << 20});
  TraceEventSorter spilled({.max_events_in_memory = 300});
  for (const TraceEvent& e : events) {
    ASSERT_TRUE(memory.Add(e, false).ok());
    ASSERT_TRUE(spilled.Add(e, false).ok());
  }
  ASSERT_TRUE(memory.Finish().ok());
  ASSERT_TRUE(spilled.Finish().ok());
  EXPECT_GE(spilled.runs_spilled(), 16u);
  const std::vector<SortedTraceEvent> a = ReadAll(memory);
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<SortedTraceEvent> b = ReadAll(spilled);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].order, b[i].order) << "at " << i << ", pass " << pass;
      ASSERT_EQ(spilled.str(b[i].name), memory.str(a[i].name));
      ASSERT_EQ(b[i].correlation, a[i].correlation);
    }
    for (size_t i = 1; i < b.size(); ++i) ASSERT_LE(b[i - 1].ts_ns, b[i].ts_ns);
  }
}

TEST(TraceEventSorterTest, KeepsTheArgsAndWhichWereGiven) {
  TraceEventSorter sorter;
  TraceEvent e = Event(5, 1, "ncclKernel_AllReduce");
  e.correlation = 77;
  e.device = 3;
  e.stream = 20;
  e.bytes = 4096;
  e.group = "0";
  e.collective_name = "allreduce";
  e.in_nelems = 10;
  e.dtype = "Float";
  ASSERT_TRUE(sorter.Add(e, true).ok());
  ASSERT_TRUE(sorter.Add(Event(6, 1, "plain"), false).ok());
  ASSERT_TRUE(sorter.Finish().ok());
  const std::vector<SortedTraceEvent> out = ReadAll(sorter);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].has_correlation && out[0].has_device && out[0].has_stream && out[0].has_bytes);
  EXPECT_EQ(out[0].correlation, 77u);
  EXPECT_EQ(out[0].device, 3);
  EXPECT_EQ(out[0].stream, 20);
  EXPECT_EQ(sorter.str(out[0].group), "0");
  EXPECT_EQ(sorter.str(out[0].collective_name), "allreduce");
  EXPECT_EQ(sorter.str(out[0].dtype), "Float");
  EXPECT_FALSE(out[1].has_correlation || out[1].has_device || out[1].has_bytes);
  EXPECT_EQ(out[1].group, 0u);
}

}  // namespace
}  // namespace trainscope::collector
