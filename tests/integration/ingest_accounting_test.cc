// End to end on loopback: the real collector binary and real agent processes
// (trainscope-loadgen). Every event an agent attempted must be in the durable
// log or counted by that agent as dropped or refused, exactly, including when
// the collector is SIGKILLed mid-run and restarted.
#include <signal.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "collector_process.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace trainscope::testing {
namespace {

constexpr int kWorldSize = 4;

struct LoadgenRun {
  std::unique_ptr<Subprocess> process;
  std::filesystem::path summary;
};

std::vector<LoadgenRun> StartLoadgens(const std::filesystem::path& dir, const std::string& address,
                                      const std::string& job, int events, int rate) {
  std::vector<LoadgenRun> runs;
  for (int rank = 0; rank < kWorldSize; ++rank) {
    LoadgenRun run;
    run.summary = dir / absl::StrCat("summary-", rank, ".jsonl");
    run.process = std::make_unique<Subprocess>(
        std::vector<std::string>{TRAINSCOPE_LOADGEN_BIN, "--collector", address, "--job", job,
                                 "--rank", absl::StrCat(rank), "--world-size",
                                 absl::StrCat(kWorldSize), "--events", absl::StrCat(events),
                                 "--rate", absl::StrCat(rate), "--flush-timeout-ms", "60000",
                                 "--summary", run.summary.string()},
        dir / absl::StrCat("loadgen-", rank));
    EXPECT_TRUE(run.process->Start().ok());
    runs.push_back(std::move(run));
  }
  return runs;
}

// Waits for every load generator and checks the exact accounting against the log.
void ExpectExactAccounting(std::vector<LoadgenRun>& runs, const CollectorProcess& collector,
                           const std::string& job, int events_per_rank) {
  std::map<uint32_t, LoadgenSummary> by_rank;
  for (LoadgenRun& run : runs) {
    auto exit_code = run.process->Wait(absl::Seconds(120));
    ASSERT_TRUE(exit_code.ok()) << exit_code.status();
    ASSERT_EQ(*exit_code, 0) << run.process->Stderr();
    auto summaries = ParseLoadgenSummaries(ReadFile(run.summary));
    ASSERT_EQ(summaries.size(), 1u) << ReadFile(run.summary);
    by_rank[static_cast<uint32_t>(summaries[0]["rank"])] = summaries[0];
  }
  auto logged = ReadJobLog(collector.job_dir(job));
  ASSERT_TRUE(logged.ok()) << logged.status();
  ASSERT_EQ(logged->size(), static_cast<size_t>(kWorldSize));
  for (auto& [rank, s] : by_rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const double dropped = s["dropped_ring_full"] + s["dropped_buffer_full"] + s["dropped_shutdown"];
    EXPECT_EQ(s["attempted"], events_per_rank);
    EXPECT_EQ(s["attempted"], s["acked"] + s["refused"] + dropped);
    EXPECT_EQ(s["refused"], 0);
    const LoggedStream& stream = logged->at(rank);
    EXPECT_EQ(stream.events, static_cast<uint64_t>(s["acked"]));
    EXPECT_EQ(stream.duplicate_or_unordered_batches, 0u);
    EXPECT_GT(stream.events, 0u);
    EXPECT_TRUE(stream.goodbye);
  }
}

TEST(IngestAccountingTest, FourAgentsEveryEventLoggedOrCounted) {
  const auto dir = MakeTempDir("run");
  CollectorProcess collector(dir);
  ASSERT_TRUE(collector.Start().ok()) << collector.Output();

  // Paced below what the sender drains, so the log (not the drop counters) carries the bulk.
  constexpr int kEvents = 200000;
  auto runs = StartLoadgens(dir, collector.agents_address(), "acct", kEvents, /*rate=*/100000);
  ExpectExactAccounting(runs, collector, "acct", kEvents);

  collector.Kill(SIGTERM);
  auto exit_code = collector.Wait(absl::Seconds(30));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0) << collector.Output();
}

TEST(IngestAccountingTest, CollectorSigkilledMidRunLosesNothingAcknowledged) {
  const auto dir = MakeTempDir("run");
  CollectorProcess collector(dir);
  ASSERT_TRUE(collector.Start().ok()) << collector.Output();

  // Paced so the run spans the kill: 4 s of events per rank.
  constexpr int kEvents = 120000;
  constexpr int kRate = 30000;
  auto runs = StartLoadgens(dir, collector.agents_address(), "killed", kEvents, kRate);

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  collector.Kill(SIGKILL);
  auto killed = collector.Wait(absl::Seconds(10));
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(*killed, 128 + SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // agents buffer and retry meanwhile
  ASSERT_TRUE(collector.Start().ok()) << collector.Output();

  ExpectExactAccounting(runs, collector, "killed", kEvents);
  int reconnects = 0;
  for (auto& run : runs) {
    reconnects += static_cast<int>(ParseLoadgenSummaries(ReadFile(run.summary))[0]["reconnects"]);
  }
  EXPECT_GE(reconnects, kWorldSize) << "every agent should have reconnected after the kill";

  collector.Kill(SIGTERM);
  ASSERT_TRUE(collector.Wait(absl::Seconds(30)).ok());
}

}  // namespace
}  // namespace trainscope::testing
