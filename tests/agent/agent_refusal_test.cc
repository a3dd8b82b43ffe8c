// A collector that refuses a stream for good (PERMISSION_DENIED: no job
// secret, FAILED_PRECONDITION: another world size): the agent says why in its
// stats and stops waiting for acknowledgements at shutdown (issue 21:
// trainscope-loadgen hung after such a refusal).
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "fake_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"

namespace trainscope::agent {
namespace {

using ::testing::HasSubstr;

AgentOptions RefusedOptions() {
  AgentOptions options;
  options.collector_address = "127.0.0.1:1";
  options.job_id = "refused";
  options.job_token = "not-the-secret";  // given: the environment is not consulted
  options.world_size = 1;
  options.log_to_stderr = false;
  return options;
}

TEST(AgentRefusalTest, APermanentRefusalIsReportedAndShutdownStopsWaitingForAcks) {
  auto collector = std::make_shared<FakeCollector>();
  {
    base::MutexLock lock(&collector->mu);
    collector->refuse_hello =
        absl::PermissionDeniedError("job refused: rank 0 presented no job secret");
  }
  auto agent =
      Agent::StartWithTransport(RefusedOptions(), std::make_unique<FakeTransport>(collector));
  ASSERT_TRUE(agent.ok()) << agent.status();
  const StringId name = (*agent)->Intern("op");
  uint64_t attempted = 0;
  for (int i = 0; i < 1000; ++i) attempted += (*agent)->RecordOperator(name, i, i + 1, i);
  ASSERT_TRUE(WaitFor([&] { return !(*agent)->stats().refusal.empty(); }));
  EXPECT_THAT((*agent)->stats().refusal, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT((*agent)->stats().refusal, HasSubstr("presented no job secret"));

  const absl::Time start = absl::Now();
  (*agent)->Shutdown(absl::Seconds(120));
  // Before, it waited the whole deadline for acknowledgements that could not
  // come; the margin only catches that.
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));
  const AgentStats stats = (*agent)->stats();
  EXPECT_EQ(stats.events_acked, 0u);
  EXPECT_EQ(attempted, stats.events_recorded + stats.dropped_ring_full);
  EXPECT_EQ(stats.events_recorded, stats.dropped_shutdown);  // every one counted
}

TEST(AgentRefusalTest, TheRefusalClearsOnceAStreamIsAcknowledged) {
  auto collector = std::make_shared<FakeCollector>();
  {
    base::MutexLock lock(&collector->mu);
    collector->refuse_hello = absl::FailedPreconditionError("world size 8, the job's is 2");
  }
  AgentOptions options = RefusedOptions();
  options.reconnect_max = absl::Milliseconds(200);  // retries soon after a refusal
  auto agent = Agent::StartWithTransport(options, std::make_unique<FakeTransport>(collector));
  ASSERT_TRUE(agent.ok()) << agent.status();
  ASSERT_TRUE(WaitFor([&] { return !(*agent)->stats().refusal.empty(); }));
  EXPECT_THAT((*agent)->stats().refusal, HasSubstr("FAILED_PRECONDITION"));
  {
    base::MutexLock lock(&collector->mu);
    collector->refuse_hello = absl::OkStatus();
  }
  ASSERT_TRUE(WaitFor([&] { return (*agent)->stats().connected; }));
  EXPECT_EQ((*agent)->stats().refusal, "");
  (*agent)->Shutdown(absl::Seconds(5));
}

}  // namespace
}  // namespace trainscope::agent
