// The one job-state rule, and a stored log read by it: the state a front end
// shows for a log is the state the collector showed live (a halt issued wins
// even after every rank said goodbye; issue 23.5: "halted" live, "finished"
// stored).
#include "trainscope/collector/store/job_state_rule.h"

#include <gtest/gtest.h>

#include <string>

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;

// Folds a stream's life into `state` as the collector logs it.
void Stream(JobLogState* state, uint32_t rank, uint64_t instance, uint32_t restart_count,
            bool closed, bool goodbye, const std::string& error = "",
            bool collector_stopping = false) {
  v1::LogRecord opened;
  v1::Hello* hello = opened.mutable_stream_opened()->mutable_hello();
  hello->set_rank(rank);
  hello->set_world_size(2);
  hello->set_agent_instance_id(instance);
  hello->set_restart_count(restart_count);
  FoldLogRecord(opened, state);
  if (!closed) return;
  v1::LogRecord end;
  v1::StreamClosed* c = end.mutable_stream_closed();
  c->set_rank(rank);
  c->set_agent_instance_id(instance);
  c->set_goodbye(goodbye);
  c->set_error(error);
  c->set_collector_stopping(collector_stopping);
  FoldLogRecord(end, state);
}

void Command(JobLogState* state, const std::string& name, uint32_t ranks_reached) {
  v1::LogRecord record;
  record.mutable_command()->set_command(name);
  record.mutable_command()->set_ranks_reached(ranks_reached);
  FoldLogRecord(record, state);
}

TEST(JobStateRuleTest, HaltWinsThenRunningThenFinishedThenLostElseIdle) {
  EXPECT_EQ(DecideJobState({}), v1::JOB_STATE_IDLE);
  EXPECT_EQ(DecideJobState({.halted = true, .ranks_seen = 2, .goodbyes = 2}), v1::JOB_STATE_HALTED);
  EXPECT_EQ(DecideJobState({.ranks_seen = 2, .connected = 1, .vanished = 1}),
            v1::JOB_STATE_RUNNING);
  EXPECT_EQ(DecideJobState({.ranks_seen = 2, .goodbyes = 2}), v1::JOB_STATE_FINISHED);
  EXPECT_EQ(DecideJobState({.ranks_seen = 2, .goodbyes = 1}), v1::JOB_STATE_IDLE);
  EXPECT_EQ(DecideJobState({.ranks_seen = 2, .goodbyes = 1, .vanished = 1}), v1::JOB_STATE_LOST);
}

TEST(JobStateRuleTest, AStoredJobThatWasHaltedReadsHaltedNotFinished) {
  JobLogState state;
  Stream(&state, 0, 10, 0, /*closed=*/true, /*goodbye=*/true);
  Stream(&state, 1, 11, 0, /*closed=*/true, /*goodbye=*/true);
  EXPECT_EQ(StoredJobState(state), v1::JOB_STATE_FINISHED);
  Command(&state, "enable", 2);
  EXPECT_EQ(StoredJobState(state), v1::JOB_STATE_FINISHED);
  Command(&state, "halt", 2);
  EXPECT_EQ(StoredJobState(state), v1::JOB_STATE_HALTED);
}

TEST(JobStateRuleTest, AStoredJobIsLostOrIdleByItsRanksLatestIncarnation) {
  JobLogState lost;
  Stream(&lost, 0, 10, 0, true, true);
  Stream(&lost, 1, 11, 0, true, /*goodbye=*/false);
  EXPECT_EQ(StoredJobState(lost), v1::JOB_STATE_LOST);
  // Rank 1 restarted and then ended cleanly: its newest incarnation decides.
  Stream(&lost, 1, 12, 1, true, true);
  EXPECT_EQ(StoredJobState(lost), v1::JOB_STATE_FINISHED);

  // A goodbye that says an error counts with the vanished.
  JobLogState failed;
  Stream(&failed, 0, 10, 0, true, true, "CUDA error");
  EXPECT_EQ(StoredJobState(failed), v1::JOB_STATE_LOST);

  // Cut by a stopping collector, or still open at the log's end: not ended,
  // so neither finished nor lost.
  JobLogState cut;
  Stream(&cut, 0, 10, 0, true, false, "", /*collector_stopping=*/true);
  Stream(&cut, 1, 11, 0, /*closed=*/false, false);
  EXPECT_EQ(StoredJobState(cut), v1::JOB_STATE_IDLE);
  EXPECT_EQ(StoredJobState(JobLogState{}), v1::JOB_STATE_IDLE);
}

}  // namespace
}  // namespace trainscope::collector
