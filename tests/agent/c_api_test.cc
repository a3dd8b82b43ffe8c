#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainscope/agent/c_agent_options.h"
#include "trainscope_agent.h"

extern "C" int trainscope_test_start_from_c(const char* job_id, const char* address, char* error,
                                            size_t error_len, unsigned* recorded);

namespace {

TEST(CApiTest, InvalidOptionsNameTheField) {
  char error[256] = "untouched";
  unsigned recorded = 0;
  EXPECT_NE(trainscope_test_start_from_c(nullptr, "127.0.0.1:1", error, sizeof error, &recorded),
            0);
  EXPECT_NE(std::string(error).find("job_id"), std::string::npos) << error;

  trainscope_agent_options options;
  trainscope_agent_options_init(&options);
  options.job_id = "j";
  options.rank = 3;
  options.world_size = 2;
  trainscope_agent* agent = reinterpret_cast<trainscope_agent*>(0x1);
  EXPECT_NE(trainscope_agent_start(&options, &agent, error, sizeof error), 0);
  EXPECT_EQ(agent, nullptr);
  EXPECT_NE(std::string(error).find("rank 3"), std::string::npos) << error;

  options.rank = 0;
  options.collector_address = "no-port";
  EXPECT_NE(trainscope_agent_start(&options, &agent, error, sizeof error), 0);
  EXPECT_NE(std::string(error).find("collector_address"), std::string::npos) << error;

  // A tiny error buffer is truncated, still NUL-terminated.
  char small[4] = {'x', 'x', 'x', 'x'};
  EXPECT_NE(trainscope_agent_start(&options, &agent, small, sizeof small), 0);
  EXPECT_EQ(std::strlen(small), 3u);
  EXPECT_NE(trainscope_agent_start(nullptr, &agent, nullptr, 0), 0);
}

TEST(CApiTest, EveryOptionCrossesToTheCppOptions) {
  trainscope_agent_options c;
  trainscope_agent_options_init(&c);
  // Defaults: the C++ ones.
  const trainscope::agent::AgentOptions defaults;
  trainscope::agent::AgentOptions o = trainscope::agent::AgentOptionsFromC(c);
  EXPECT_EQ(o.collector_address, defaults.collector_address);
  EXPECT_EQ(o.flush_interval, defaults.flush_interval);
  EXPECT_EQ(o.shutdown_deadline, defaults.shutdown_deadline);
  EXPECT_TRUE(o.halt_when.empty());

  const char* kinds[] = {"stalled_rank", "lost_device"};
  c.job_id = "j";
  c.halt_when = kinds;
  c.halt_when_count = 2;
  c.halt_below_efficiency = 0.4;
  c.halt_for_steps = 7;
  c.test_clock_offset_ns = -5;
  c.test_clock_drift_ppm = 12.5;
  c.test_clock_origin_ns = 99;
  c.flush_interval_ms = 7;
  c.rack = "rack-b";
  o = trainscope::agent::AgentOptionsFromC(c);
  EXPECT_EQ(o.job_id, "j");
  EXPECT_EQ(o.rack, "rack-b");
  EXPECT_EQ(o.halt_when, (std::vector<std::string>{"stalled_rank", "lost_device"}));
  EXPECT_EQ(o.halt_below_efficiency, 0.4);
  EXPECT_EQ(o.halt_for_steps, 7u);
  EXPECT_EQ(o.test_clock_offset_ns, -5);
  EXPECT_EQ(o.test_clock_drift_ppm, 12.5);
  EXPECT_EQ(o.test_clock_origin_ns, 99);
  EXPECT_EQ(o.flush_interval, absl::Milliseconds(7));

  trainscope::agent::AgentStats stats;
  stats.loss_reports_submitted = 3;
  stats.loss_reports_dropped = 1;
  stats.connected = true;
  struct trainscope_agent_stats out;
  trainscope::agent::AgentStatsToC(stats, &out);
  EXPECT_EQ(out.loss_reports_submitted, 3u);
  EXPECT_EQ(out.loss_reports_dropped, 1u);
  EXPECT_EQ(out.connected, 1);
  EXPECT_EQ(out.halt_requested, 0);
}

TEST(CApiTest, NullAgentIsANoOp) {
  EXPECT_EQ(trainscope_intern(nullptr, "x"), 0u);
  EXPECT_EQ(trainscope_record_operator(nullptr, 1, 0, 1, 0, 0), 0);
  EXPECT_EQ(trainscope_record_operator_begin(nullptr, 1, 0, 0, 0), 0);
  EXPECT_EQ(trainscope_record_operator_end(nullptr, 1, 0, 0, 0), 0);
  EXPECT_EQ(trainscope_record_collective(nullptr, 1, 1, 1, 1, 1, -1, 0, 1), 0);
  EXPECT_EQ(trainscope_record_step(nullptr, 1, 0), 0);
  EXPECT_EQ(trainscope_record_phase(nullptr, 1, 1, 0, 1), 0);
  EXPECT_EQ(trainscope_record_counter(nullptr, 1, 1, 0), 0);
  EXPECT_EQ(trainscope_is_recording(nullptr), 0);
  trainscope_set_recording(nullptr, 1);
  char reason[8] = "keep";
  EXPECT_EQ(trainscope_halt_requested(nullptr, reason, sizeof reason), 0);
  EXPECT_STREQ(reason, "keep");
  struct trainscope_agent_stats stats;
  std::memset(&stats, 0xff, sizeof stats);
  trainscope_agent_stats(nullptr, &stats);
  EXPECT_EQ(stats.events_recorded, 0u);
  EXPECT_EQ(stats.connected, 0);
  trainscope_agent_shutdown(nullptr, 0);
  EXPECT_GT(trainscope_now_ns(), 0);
}

TEST(CApiTest, RecordsFromCWithoutACollector) {
  char error[256];
  unsigned recorded = 0;
  // Port 1 on loopback: nothing listens; the agent must not wait for it.
  ASSERT_EQ(trainscope_test_start_from_c("c-job", "127.0.0.1:1", error, sizeof error, &recorded), 0)
      << error;
  EXPECT_EQ(recorded, 5u);
}

TEST(CApiTest, DormantAgentReportsNotRecording) {
  trainscope_agent_options options;
  trainscope_agent_options_init(&options);
  options.job_id = "dormant";
  options.collector_address = "127.0.0.1:1";
  options.start_recording = 0;
  options.log_to_stderr = 0;
  trainscope_agent* agent = nullptr;
  char error[128];
  ASSERT_EQ(trainscope_agent_start(&options, &agent, error, sizeof error), 0) << error;
  EXPECT_EQ(trainscope_is_recording(agent), 0);
  EXPECT_EQ(trainscope_record_step(agent, 1, 1), 0);
  trainscope_set_recording(agent, 1);
  EXPECT_EQ(trainscope_is_recording(agent), 1);
  EXPECT_EQ(trainscope_record_step(agent, 1, 1), 1);
  struct trainscope_agent_stats stats;
  trainscope_agent_stats(agent, &stats);
  EXPECT_EQ(stats.events_recorded, 1u);
  trainscope_agent_shutdown(agent, 20);
}

}  // namespace
