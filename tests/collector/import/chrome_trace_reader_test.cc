#include "trainscope/collector/import/chrome_trace_reader.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::collector {
namespace {

using ::testing::HasSubstr;

class ChromeTraceReaderTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text, bool gzip = false) {
    const std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path) << text;
    }
    return path;
  }
  // Every event until the end or an error.
  absl::Status ReadAll(ChromeTraceReader& reader, std::vector<TraceEvent>* events) {
    TraceEvent e;
    while (true) {
      absl::StatusOr<bool> got = reader.Next(&e);
      if (!got.ok()) return got.status();
      if (!*got) return absl::OkStatus();
      events->push_back(e);
    }
  }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("trainscope-reader-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// torch 1.13's legacy profiler: a top-level list, µs since the profiler started.
constexpr char kLegacy[] =
    R"([{"name": "aten::zeros", "ph": "X", "ts": 397, "dur": 80, "tid": 1, "pid": "CPU functions", "args": {}},)"
    R"( {"name": "ProfilerStep#0", "ph": "X", "ts": 505, "dur": 1472, "tid": 1, "pid": "CPU functions", "args": {}},)"
    R"( {"name": "gloo:all_reduce", "ph": "X", "ts": 900.5, "dur": 20.25, "tid": 7, "pid": "CPU functions", "args": {"a": [1, {"b": null}], "c": true}}])";

TEST_F(ChromeTraceReaderTest, ReadsTheLegacyListPlainAndGzipped) {
  for (bool gzip : {false, true}) {
    ChromeTraceReader reader(Write(gzip ? "t.json.gz" : "t.json", kLegacy, gzip));
    std::vector<TraceEvent> events;
    ASSERT_TRUE(ReadAll(reader, &events).ok());
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].name, "aten::zeros");
    EXPECT_EQ(events[1].name, "ProfilerStep#0");
    EXPECT_EQ(events[2].name, "gloo:all_reduce");
    EXPECT_DOUBLE_EQ(events[2].ts_us, 900.5);
    EXPECT_DOUBLE_EQ(events[2].dur_us, 20.25);
    EXPECT_EQ(events[2].tid, 7);
    EXPECT_FALSE(reader.rank().has_value());
  }
}

TEST_F(ChromeTraceReaderTest, ReadsKinetoObjectsWithTheirRankAndSkipsOtherPhases) {
  ChromeTraceReader reader(Write("kineto.json", R"({
    "schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "X\"Y"}],
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 12, "args": {"name": "python"}},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 12, "tid": 13,
       "ts": 1700000000123.5, "dur": 10, "args": {"Collective name": "allreduce",
       "Process Group Name": "0", "In msg nelems": 1024}},
      {"ph": "s", "id": 1, "ts": 1, "pid": 12, "tid": 13}
    ],
    "traceName": "rank3.pt.trace.json"
  })"));
  std::vector<TraceEvent> events;
  ASSERT_TRUE(ReadAll(reader, &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(reader.rank(), 3u);
  EXPECT_EQ(events[0].collective_name, "allreduce");
  EXPECT_EQ(events[0].group, "0");
  EXPECT_EQ(events[0].pid, 12);
  EXPECT_EQ(reader.skipped(), 2u);
}

TEST_F(ChromeTraceReaderTest, MalformedInputNamesTheFileTheOffsetAndWhatWasExpected) {
  const std::string path = Write("bad.json", R"([{"ph": "X", "name": "a", "ts": 1}, {"ph" "X"}])");
  ChromeTraceReader reader(path);
  std::vector<TraceEvent> events;
  const absl::Status s = ReadAll(reader, &events);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(std::string(s.message()), HasSubstr("byte 42")) << s;
  EXPECT_THAT(s.message(), HasSubstr("expected ':'"));
  EXPECT_EQ(events.size(), 1u) << "what came before the error is kept";
}

TEST_F(ChromeTraceReaderTest, TruncatedInputIsDataLossAndKeepsTheEventsBefore) {
  std::string text = kLegacy;
  text.resize(text.size() - 40);  // inside the last event
  ChromeTraceReader reader(Write("cut.json.gz", text, /*gzip=*/true));
  std::vector<TraceEvent> events;
  const absl::Status s = ReadAll(reader, &events);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("truncated at byte"));
  EXPECT_EQ(events.size(), 2u);
}

TEST_F(ChromeTraceReaderTest, UnknownSchemaAndMissingFilesAreClearErrors) {
  ChromeTraceReader number(Write("n.json", "42"));
  TraceEvent e;
  EXPECT_THAT(number.Next(&e).status().message(), HasSubstr("expected a Chrome trace"));
  ChromeTraceReader no_events(Write("o.json", R"({"schemaVersion": 1})"));
  EXPECT_THAT(no_events.Next(&e).status().message(), HasSubstr("traceEvents"));
  ChromeTraceReader missing((dir_ / "nope.json").string());
  EXPECT_EQ(missing.Next(&e).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ChromeTraceReaderTest, ReadsAcrossChunkBoundaries) {
  // More than the 1 MiB read chunk, names with escapes split anywhere.
  std::string text = "[";
  for (int i = 0; i < 20000; ++i) {
    if (i > 0) text += ",\n";
    text += R"({"name": "op\"\\\u0041)" + std::to_string(i) + R"(", "ph": "X", "ts": )" +
            std::to_string(i) + R"(, "dur": 1, "tid": 1, "pid": 0})";
  }
  text += "]";
  ChromeTraceReader reader(Write("big.json", text));
  std::vector<TraceEvent> events;
  ASSERT_TRUE(ReadAll(reader, &events).ok());
  ASSERT_EQ(events.size(), 20000u);
  EXPECT_EQ(events[19999].name, "op\"\\A19999");
  EXPECT_EQ(reader.bytes(), text.size());
}

TEST_F(ChromeTraceReaderTest, MetadataAfterTheEventsFlowsGpuArgsAndExactNanoseconds) {
  // AMD's writer (and others) put distributedInfo and the like after the events.
  ChromeTraceReader reader(Write("late.json", R"({
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42297524224,
                          "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
    "traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
       "ts": 1712195495519689.123456, "dur": 2.5,
       "args": {"device": 0, "stream": 7, "correlation": 18446744073709551, "bytes": 12}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 5, "tid": 5,
       "ts": 1, "dur": 1, "args": {"stream": "0x0", "correlation": 3, "flops": 1000}},
      {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 2, "cat": "ac2g", "name": "ac2g", "bp": "e"},
      {"ph": "s", "id": 4, "pid": 5, "tid": 5, "ts": 1, "cat": "async_cpu_to_gpu", "name": "a"},
      {"ph": "s", "id": 1, "pid": 5, "tid": 5, "ts": 1, "cat": "fwdbwd", "name": "fwdbwd"},
      {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 5, "tid": 5, "ts": 3,
       "dur": 1, "args": {"In msg nelems": 10, "Out msg nelems": 20, "dtype": "Float"}}
    ],
    "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8, "hostname": "node-7"}
  })"));
  std::vector<TraceEvent> events;
  ASSERT_TRUE(ReadAll(reader, &events).ok());
  ASSERT_EQ(events.size(), 5u);                     // the fwdbwd flow is skipped
  EXPECT_EQ(events[0].ts_ns, 1712195495519689123);  // a double would round it
  EXPECT_EQ(events[0].dur_ns, 2500);
  EXPECT_EQ(events[0].device, 0);
  EXPECT_EQ(events[0].stream, 7);
  EXPECT_EQ(events[0].correlation, 18446744073709551u);
  EXPECT_EQ(events[0].bytes, 12u);
  EXPECT_FALSE(events[1].stream.has_value()) << "a runtime call's \"0x0\" is not a stream";
  EXPECT_EQ(events[1].flops, 1000u);
  EXPECT_EQ(events[2].phase, TraceEvent::Phase::kFlowEnd);
  EXPECT_EQ(events[2].flow_id, 3u);
  EXPECT_EQ(events[3].phase, TraceEvent::Phase::kFlowStart);
  EXPECT_EQ(events[4].in_nelems, 10u);
  EXPECT_EQ(events[4].out_nelems, 20u);
  EXPECT_EQ(events[4].dtype, "Float");
  const TraceMetadata& meta = reader.metadata();
  EXPECT_EQ(meta.rank, 5u);
  EXPECT_EQ(meta.world_size, 8u);
  EXPECT_EQ(meta.host, "node-7");
  ASSERT_EQ(meta.gpus.size(), 1u);
  EXPECT_EQ(meta.gpus[0].name, "NVIDIA A100");
  EXPECT_EQ(meta.gpus[0].total_memory, 42297524224u);
  EXPECT_EQ(meta.gpus[0].multiprocessors, 108u);
  EXPECT_EQ(meta.gpus[0].compute_major, 8);
}

}  // namespace
}  // namespace trainscope::collector
