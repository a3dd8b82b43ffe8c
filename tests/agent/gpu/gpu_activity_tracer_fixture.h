// Test helper: the fixture of GpuActivityTracer's tests (TracerTest, split
// by topic over gpu_activity_tracer*_test.cc): a tracer started on a
// FakeCupti with sinks the test reads (the event queue, the log lines, a
// recording switch), and CUPTI records of a kernel launch to feed it.
//
// Usage:
//   TEST_F(TracerTest, Something) {
//     Start();
//     fake_.pending.push_back(Launch(op, 1, kCuptiAhead + 100));
//     tracer_->RunWorkerTurnForTest();
//     EXPECT_EQ(Drain().size(), 2u);
//   }
//
// Threading: the test thread's; the tracer's worker only flushes the fake.
#ifndef TRAINSCOPE_TESTS_AGENT_GPU_GPU_ACTIVITY_TRACER_FIXTURE_H_
#define TRAINSCOPE_TESTS_AGENT_GPU_GPU_ACTIVITY_TRACER_FIXTURE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/fake_cupti.h"
#include "gpu/gpu_activity_tracer.h"
#include "gpu/synthetic_activity_buffer.h"
#include "gtest/gtest.h"
#include "string_table.h"

namespace trainscope::agent {

class TracerTest : public ::testing::Test {
 protected:
  using B = SyntheticActivityBuffer;
  static constexpr uint64_t kCuptiAhead = FakeCupti::kCuptiAhead;

  TracerTest();
  ~TracerTest() override;

  // Starts the tracer; the test drives the worker's turns.
  void Start(GpuActivityTracer::Options options = {});
  // Starts the tracer with its own timer (options.flush_period).
  void StartWithTimer(GpuActivityTracer::Options options);

  // A launch (call 211) of a kernel, in CUPTI's clock, with its operator.
  static B Launch(StringId op, uint32_t correlation, uint64_t at);
  // A kernel launched (its call record written) whose device record is not
  // finished: start known, end 0, as CUPTI hands it over when forced.
  static B Unfinished(StringId op, uint32_t correlation, uint64_t at);
  void Hold(const B& records) { fake_.Hold(records); }
  void FinishHeld(const B& finished) { fake_.FinishHeld(finished); }

  std::vector<GpuEventRecord> Drain();
  int LogLinesWith(const std::string& text) const;

  FakeCupti fake_;
  StringTable strings_;
  GpuEventQueue queue_;
  std::atomic<bool> recording_{true};
  std::vector<std::string> log_;
  std::unique_ptr<GpuActivityTracer> tracer_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_TESTS_AGENT_GPU_GPU_ACTIVITY_TRACER_FIXTURE_H_
