#include "trainscope/collector/export/chrome_trace_writer.h"

#include <map>
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
