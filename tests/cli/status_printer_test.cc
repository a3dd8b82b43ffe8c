#include "trainscope/cli/status_printer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNowNs = 1'700'000'000'000'000'000;
const absl::Time kNow = absl::FromUnixNanos(kNowNs);

trainscope::v1::JobSummary Summary(const std::string& id) {
  trainscope::v1::JobSummary summary;
  summary.set_job_id(id);
  summary.set_state(trainscope::v1::JOB_STATE_RUNNING);
  summary.set_world_size(4);
  summary.set_ranks_connected(3);
  summary.set_ranks_seen(4);
  summary.set_events_received(1234567);
  summary.set_events_per_second(52000.4);
  summary.set_recording(true);
  summary.set_bytes_received(3 << 20);
  summary.set_created_unix_ns(kNowNs - 60'000'000'000);
  summary.set_last_event_unix_ns(kNowNs - 3'000'000'000);
  return summary;
}

TEST(StatusPrinterTest, JobsTable) {
  trainscope::v1::ListJobsResponse jobs;
  *jobs.add_jobs() = Summary("resnet");
  trainscope::v1::JobSummary* other = jobs.add_jobs();
  other->set_job_id("bert-large");
  other->set_state(trainscope::v1::JOB_STATE_HALTED);
  other->set_world_size(8);
  EXPECT_EQ(RenderJobsTable(jobs, "127.0.0.1:7070"),
            "JOB         STATE    RANKS     EVENTS  EVENTS/S  RECORDING\n"
            "resnet      running    3/4  1,234,567  52,000/s  on\n"
            "bert-large  halted     0/8          0       0/s  off\n");
}

TEST(StatusPrinterTest, NoJobsIsAFriendlyLine) {
  const std::string text = RenderJobsTable({}, "10.0.0.1:7070");
  EXPECT_THAT(text, HasSubstr("no jobs yet"));
  EXPECT_THAT(text, HasSubstr("10.0.0.1:7070"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(StatusPrinterTest, TierLinePerRole) {
  EXPECT_EQ(RenderTierStatus({}), "");
  trainscope::v1::TierStatus tier;
  tier.set_node(true);
  tier.set_publish_url("nats://10.0.0.5:4222");
  tier.set_connected(true);
  tier.set_buffered(12);
  tier.set_published(4567);
  tier.set_caught_up(30);
  tier.set_rewinds(1);
  tier.set_outages(2);
  EXPECT_EQ(RenderTierStatus(tier),
            "tier node -> nats://10.0.0.5:4222: connected, 12 buffered, 4,567 published "
            "(acknowledged), 30 caught up from the log, 1 rewinds, 2 outages\n");
  tier.set_connected(false);
  EXPECT_THAT(RenderTierStatus(tier), HasSubstr("NOT CONNECTED (buffering)"));

  // A rack collector is both: one line per role.
  tier.set_job_level(true);
  tier.set_upstream_url("nats://10.0.0.1:4222");
  tier.set_consumed(4560);
  tier.set_duplicates(3);
  tier.set_received(4570);
  tier.set_lag_ns(12'300'000);
  const std::string text = RenderTierStatus(tier);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_THAT(text, HasSubstr("tier job level <- nats://10.0.0.1:4222: 4,560 consumed, 3 "
                              "duplicates dropped, 4,570 received, lag 12.30 ms\n"));
}

TEST(StatusPrinterTest, SummaryLine) {
  EXPECT_EQ(RenderJobSummaryLine(Summary("resnet")),
            "job resnet: running, 3/4 ranks connected (4 seen), 1,234,567 events (52,000/s), "
            "recording on");
  trainscope::v1::JobSummary switched = Summary("resnet");
  switched.set_loss_contribution(false);
  EXPECT_THAT(RenderJobSummaryLine(switched),
              ::testing::EndsWith("recording on, loss contribution off"));
}

TEST(StatusPrinterTest, JobStatusWithRanksAndCommands) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("resnet");
  status.set_feed_sequence(42);
  trainscope::v1::RankStatus* rank0 = status.add_ranks();
  rank0->set_rank(0);
  rank0->set_host("node-a");
  rank0->set_pid(1234);
  rank0->set_connected(true);
  rank0->set_events_received(600000);
  rank0->set_batches_received(60);
  rank0->set_last_seen_unix_ns(kNowNs - 2'000'000'000);
  trainscope::v1::RankStatus* rank3 = status.add_ranks();
  rank3->set_rank(3);
  rank3->set_host("node-b");
  rank3->set_pid(99);
  rank3->set_said_goodbye(true);
  rank3->mutable_agent_drops()->set_ring_full(5);
  rank3->set_batches_refused(2);
  rank3->set_last_seen_unix_ns(kNowNs - 125'000'000'000);
  trainscope::v1::CommandRecord* halt = status.add_commands();
  halt->set_command("halt");
  halt->set_requested_by("alice@box");
  halt->set_reason("stragglers");
  halt->set_ranks_reached(3);
  halt->set_requested_unix_ns(kNowNs);
  halt->set_halt_at_step(57);
  halt->set_halt_margin_steps(34);

  const std::string text = RenderJobStatus(status, kNow, absl::UTCTimeZone());
  EXPECT_THAT(text, HasSubstr("job resnet: running, 3/4 ranks connected"));
  EXPECT_THAT(text, HasSubstr("received 3.00 MiB"));
  EXPECT_THAT(text, HasSubstr("last event 3s ago"));
  EXPECT_THAT(text, HasSubstr("feed sequence 42"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "RANK  HOST     PID  CONNECTED      EVENTS  BATCHES  AGENT-DROPS  REFUSED  LAST-SEEN\n"
          "   0  node-a  1234  yes           600,000       60            0        0  2s ago\n"
          "   3  node-b    99  no (goodbye)        0        0   5 (ring 5)        2  2m05s ago\n"));
  EXPECT_THAT(text, HasSubstr("commands:\n  2023-11-14 22:13:20.000  halt by alice@box, reached 3 "
                              "ranks, reason \"stragglers\", at step 57 (34 past the "
                              "furthest rank)\n"));
}

TEST(StatusPrinterTest, ARankThatFailedSaysWhy) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("resnet");
  trainscope::v1::RankStatus* rank = status.add_ranks();
  rank->set_rank(2);
  rank->set_said_goodbye(true);
  rank->set_exit_error("RuntimeError: Connection closed by peer");
  const std::string text = RenderJobStatus(status, kNow, absl::UTCTimeZone());
  EXPECT_THAT(text, HasSubstr("no (failed)"));
  EXPECT_THAT(text,
              HasSubstr("rank 2 ended with an error: RuntimeError: Connection closed by peer\n"));
}

TEST(StatusPrinterTest, RefusedHellosAreShownWithTheLastReason) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("resnet");
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              ::testing::Not(HasSubstr("hellos refused")));
  status.mutable_summary()->set_hellos_refused(3);
  status.mutable_summary()->set_last_hello_refusal("job resnet: wrong job token");
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              HasSubstr("3 hellos refused (ranks that could not join, or processes without the "
                        "job's proof); the last: job resnet: wrong job token\n"));
  // Where the last came from, when the collector says.
  status.mutable_summary()->set_last_hello_refusal_from(
      "peer ipv4:127.0.0.1:4242 (host 'node-1', pid 77)");
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              HasSubstr("3 hellos refused (ranks that could not join, or processes without the "
                        "job's proof); the last, from peer ipv4:127.0.0.1:4242 (host 'node-1', "
                        "pid 77): job resnet: wrong job token\n"));
}

TEST(StatusPrinterTest, AnalysisMemoryAndNamesPastTheBudgetAreShown) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("resnet");
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              ::testing::Not(HasSubstr("analysis memory")));
  trainscope::v1::AnalysisMemory* memory = status.mutable_analysis_memory();
  memory->set_names(200);
  memory->set_name_budget(200);
  memory->set_names_over_budget(4800);
  memory->set_operators_held(0);
  memory->set_released(true);
  const std::string out = RenderJobStatus(status, kNow, absl::UTCTimeZone());
  EXPECT_THAT(out, HasSubstr("analysis memory: 200 names (budget 200), 0 operators held "
                             "(released: the job ended)\n"));
  EXPECT_THAT(out, HasSubstr("names past the budget read as \"(name budget exceeded)\""));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("operators evicted")));
}

TEST(StatusPrinterTest, StoreRefusalsAndRecoveryLossesAreShown) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("resnet");
  trainscope::v1::RankStatus* rank = status.add_ranks();
  rank->set_rank(1);
  rank->set_store_refused_batches(3);
  rank->set_store_refused_events(1200);
  rank->set_events_lost(4'900'000);
  trainscope::v1::LogRecovery* recovery = status.mutable_recovery();
  recovery->set_segments(3);
  recovery->set_records(12345);
  recovery->set_segments_missing(1);
  recovery->set_records_lost(1000);
  recovery->set_events_lost(4'900'000);
  recovery->set_bytes_lost(64 << 20);
  recovery->set_index_rebuilt(true);
  recovery->add_messages("segment-00000001.tslog: segment missing (deleted?)");
  const std::string text = RenderJobStatus(status, kNow, absl::UTCTimeZone());
  EXPECT_THAT(text, HasSubstr("rank 1: 1,200 events in 3 batches refused by the log"));
  EXPECT_THAT(text, HasSubstr("rank 1: 4,900,000 events LOST"));
  EXPECT_THAT(text, HasSubstr("recovered from disk: 12,345 records in 3 segments; LOST 4,900,000 "
                              "events, 1,000 records, 64.0 MiB (1 segment missing); index "
                              "rebuilt\n  segment-00000001.tslog: segment missing (deleted?)\n"));
  status.mutable_recovery()->Clear();
  status.mutable_recovery()->set_records(5);
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              HasSubstr("recovered from disk: 5 records in 0 segments, nothing lost\n"));
}

TEST(StatusPrinterTest, JobWithoutRanks) {
  trainscope::v1::JobStatus status;
  *status.mutable_summary() = Summary("j");
  EXPECT_THAT(RenderJobStatus(status, kNow, absl::UTCTimeZone()),
              HasSubstr("no ranks have connected yet"));
}

TEST(StatusPrinterTest, JsonIsOneLineWithProtoFieldNamesAndDefaults) {
  trainscope::v1::CommandReply reply;
  reply.set_ranks_reached(4);
  const std::string json = ToJsonLine(reply);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  EXPECT_THAT(json, HasSubstr("\"ranks_reached\":4"));
  EXPECT_THAT(json, HasSubstr("\"message\":\"\""));
}

}  // namespace
}  // namespace trainscope::cli
