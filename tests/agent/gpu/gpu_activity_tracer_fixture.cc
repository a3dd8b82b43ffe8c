#include "gpu/gpu_activity_tracer_fixture.h"

#include <utility>

#include "absl/strings/match.h"

namespace trainscope::agent {

TracerTest::TracerTest() : strings_(512, 1000), queue_(1024) {}

TracerTest::~TracerTest() { tracer_.reset(); }

void TracerTest::Start(GpuActivityTracer::Options options) {
  options.flush_period = absl::Hours(1);  // the tests drive the worker's turns
  StartWithTimer(options);
}

void TracerTest::StartWithTimer(GpuActivityTracer::Options options) {
  // Each delivered buffer's events go at once (the reorder window is
  // tested with the converter): the fake's buffers come back in order.
  options.converter.reorder_hold_ns = 0;
  GpuActivityTracer::Sinks sinks;
  sinks.queue = &queue_;
  sinks.intern = [this](std::string_view text) { return strings_.Intern(text); };
  sinks.recording = [this] { return recording_.load(); };
  sinks.log = [this](const std::string& line) { log_.push_back(line); };
  sinks.now = &FakeCupti::Now;
  auto tracer = GpuActivityTracer::Start(fake_.Api(), options, std::move(sinks));
  ASSERT_TRUE(tracer.ok()) << tracer.status();
  tracer_ = *std::move(tracer);
}

namespace {

// A launch's records; kernel_end 0: the kernel still runs.
SyntheticActivityBuffer KernelLaunch(StringId op, uint32_t correlation, uint64_t at,
                                     uint64_t kernel_end) {
  using B = SyntheticActivityBuffer;
  B b;
  b.Add(B::External(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                    ActivityRecordConverter::OperatorExternalId(op, 1), correlation));
  b.Add(B::Call(CUPTI_ACTIVITY_KIND_RUNTIME, 211, at, at + 5, 42, correlation));
  b.Add(B::Kernel("gemm", at + 20, kernel_end, 0, 7, correlation));
  return b;
}

}  // namespace

TracerTest::B TracerTest::Launch(StringId op, uint32_t correlation, uint64_t at) {
  return KernelLaunch(op, correlation, at, at + 80);
}

TracerTest::B TracerTest::Unfinished(StringId op, uint32_t correlation, uint64_t at) {
  return KernelLaunch(op, correlation, at, 0);
}

std::vector<GpuEventRecord> TracerTest::Drain() {
  std::vector<GpuEventRecord> out;
  queue_.Consume(1 << 20, [&](const GpuEventRecord& e) { out.push_back(e); });
  return out;
}

int TracerTest::LogLinesWith(const std::string& text) const {
  int n = 0;
  for (const std::string& line : log_) n += absl::StrContains(line, text);
  return n;
}

}  // namespace trainscope::agent
