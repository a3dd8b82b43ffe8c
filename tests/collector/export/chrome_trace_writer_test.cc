#include "trainscope/collector/export/chrome_trace_writer.h"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "export_test_batch.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// The trace as JSON (parsed with protobuf's JSON parser into a Struct).
Struct Parse(const std::string& text) {
  Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return parsed;
}

const google::protobuf::ListValue& Events(const Struct& trace) {
  return trace.fields().at("traceEvents").list_value();
}

std::string Field(const Value& event, const std::string& name) {
  const auto& fields = event.struct_value().fields();
  auto it = fields.find(name);
  if (it == fields.end()) return "";
  return it->second.has_string_value() ? it->second.string_value()
                                       : std::to_string(it->second.number_value());
}

TEST(ChromeTraceWriterTest, WritesOperatorsProcessesAndFlowsAsValidJson) {
  std::ostringstream out;
  ChromeTraceWriter writer(&out, "job-a");
  writer.Add(ExportTestBatch());
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_EQ(writer.operators_written(), 7u);
  EXPECT_EQ(writer.flows_written(), 2u);  // the all-reduce pair, the send/recv pair

  const Struct trace = Parse(out.str());
  std::map<std::string, int> phases;
  std::map<std::string, int> categories;
  for (const Value& e : Events(trace).values()) {
    ++phases[Field(e, "ph")];
    if (Field(e, "ph") == "X") ++categories[Field(e, "cat")];
  }
  EXPECT_EQ(phases["X"], 7);
  EXPECT_EQ(phases["s"], 2);
  EXPECT_EQ(phases["f"], 2);
  EXPECT_EQ(phases["M"], 6);  // per rank: name, sort index, one thread name
  EXPECT_EQ(categories["compute"], 3);
  EXPECT_EQ(categories["collective"], 2);
  EXPECT_EQ(categories["send"], 1);
  EXPECT_EQ(categories["recv"], 1);
  EXPECT_EQ(trace.fields().at("otherData").struct_value().fields().at("job").string_value(),
            "job-a");
}

TEST(ChromeTraceWriterTest, TimesAreMicrosecondsAfterTheFirstOperatorWithNanoseconds) {
  std::ostringstream out;
  ChromeTraceWriter writer(&out, "job-a");
  writer.Add(ExportTestBatch());
  ASSERT_TRUE(writer.Finish().ok());
  // The conv starts first (t0 + 1000 ns): ts 0; the add 1000 ns later, 1.5 us long.
  EXPECT_THAT(out.str(), ::testing::HasSubstr(R"("name":"aten::add","cat":"compute","pid":0,)"
                                              R"("tid":7,"ts":1.000,"dur":1.500)"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr(R"("origin_unix_ns":1795000000000001000)"));
}

TEST(ChromeTraceWriterTest, GpuStreamsAreTracksOfTheirOwnPerDevice) {
  std::ostringstream out;
  ChromeTraceWriter writer(&out, "job-gpu");
  writer.Add(ExportGpuTestBatch());
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_EQ(writer.operators_written(), 7u);
  EXPECT_EQ(writer.flows_written(), 1u);  // the two NCCL kernels of collective 4

  const Struct trace = Parse(out.str());
  std::map<std::string, std::string> process_names;  // pid -> name
  std::map<std::pair<std::string, std::string>, std::string> thread_names;
  std::map<std::string, std::set<std::pair<std::string, std::string>>>
      places;  // name -> (pid, tid)
  std::map<std::string, std::string> category;
  for (const Value& e : Events(trace).values()) {
    if (Field(e, "ph") == "s" || Field(e, "ph") == "f") continue;  // flows carry no args
    const auto& args = e.struct_value().fields().at("args").struct_value().fields();
    if (Field(e, "ph") == "M" && Field(e, "name") == "process_name") {
      process_names[Field(e, "pid")] = args.at("name").string_value();
    }
    if (Field(e, "ph") == "M" && Field(e, "name") == "thread_name") {
      thread_names[{Field(e, "pid"), Field(e, "tid")}] = args.at("name").string_value();
    }
    if (Field(e, "ph") == "X") {
      places[Field(e, "name")].insert({Field(e, "pid"), Field(e, "tid")});
      category[Field(e, "name")] = Field(e, "cat");
    }
  }
  // A process per rank (the rank stays the pid: the export imports back);
  // each GPU stream a thread of its own in it, apart from the CPU threads.
  ASSERT_EQ(process_names.size(), 2u);
  const std::string rank0 = std::to_string(0.0), rank1 = std::to_string(1.0);
  EXPECT_EQ(process_names[rank0], "rank 0");
  EXPECT_EQ(process_names[rank1], "rank 1");
  auto stream = [](uint32_t device, uint32_t s) {
    return std::to_string(static_cast<double>(ChromeTraceWriter::StreamTid(device, s)));
  };
  auto thread_name = [&](const std::string& pid, const std::string& tid) {
    return thread_names[{pid, tid}];
  };
  EXPECT_EQ(thread_name(rank0, std::to_string(11.0)), "thread 11");
  EXPECT_EQ(thread_name(rank0, stream(0, 7)), "GPU 0 stream 7");
  EXPECT_EQ(thread_name(rank0, stream(0, 20)), "GPU 0 stream 20");
  EXPECT_EQ(thread_name(rank1, stream(1, 24)), "GPU 1 stream 24");
  EXPECT_EQ(thread_name(rank1, stream(1, 9)), "GPU 1 stream 9");
  EXPECT_EQ(thread_names.size(), 6u);     // rank 0's thread 11 and five streams
  EXPECT_NE(stream(0, 7), stream(1, 7));  // one stream id on two GPUs: two tracks
  EXPECT_EQ(places["aten::mm"],
            (std::set<std::pair<std::string, std::string>>{{rank0, std::to_string(11.0)}}));
  EXPECT_EQ(places["ncclDevKernel_AllReduce_Sum_f32"],
            (std::set<std::pair<std::string, std::string>>{{rank0, stream(0, 20)},
                                                           {rank1, stream(1, 24)}}));
  // Kineto's categories.
  EXPECT_EQ(category["sm90_xmma_gemm"], "kernel");
  EXPECT_EQ(category["ncclDevKernel_AllReduce_Sum_f32"], "kernel");
  EXPECT_EQ(category["Memcpy HtoD (Pinned -> Device)"], "gpu_memcpy");
  EXPECT_EQ(category["Memset (Device)"], "gpu_memset");
  EXPECT_EQ(category["aten::mm"], "compute");
  EXPECT_THAT(out.str(), ::testing::HasSubstr(R"("device":0,"stream":7,"correlation":102,)"
                                              R"("launched_by":"aten::mm")"));
}

TEST(ChromeTraceWriterTest, EscapesNames) {
  std::ostringstream out;
  ChromeTraceWriter writer(&out, "job \"a\"");
  writer.Add(ExportTestBatch());
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_THAT(out.str(), ::testing::HasSubstr(R"("name":"aten::\"conv\"")"));
  Parse(out.str());  // still valid JSON
}

TEST(ChromeTraceWriterTest, AFailedStreamIsDataLoss) {
  std::ostringstream out;
  ChromeTraceWriter writer(&out, "job-a");
  writer.Add(ExportTestBatch());
  out.setstate(std::ios::badbit);
  EXPECT_EQ(writer.Finish().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace trainscope::collector
