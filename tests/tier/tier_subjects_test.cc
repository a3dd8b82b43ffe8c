#include "trainscope/tier/tier_subjects.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::tier {
namespace {

using ::testing::HasSubstr;

TEST(TierSubjectsTest, NamesWithDotsStayOneTokenAndNeverCollide) {
  EXPECT_EQ(SubjectToken("job-1"), "job-1");
  EXPECT_EQ(SubjectToken("a.b"), "a_db");
  EXPECT_EQ(SubjectToken("a_b"), "a__b");
  // "a.b" and a literal "a_db" must not share a token.
  EXPECT_NE(SubjectToken("a.b"), SubjectToken("a_db"));
  EXPECT_EQ(RecordSubject("train.v2", "node.3"), "trainscope.rec.train_dv2.node_d3");
  EXPECT_EQ(CommandSubject("train.v2"), "trainscope.cmd.train_dv2");
  // One subject per job and kind of state: the last halt survives a later
  // recording switch for a consumer that starts with the last per subject.
  EXPECT_EQ(CommandSubject("train.v2", v1::TierCommand::KIND_HALT),
            "trainscope.cmd.train_dv2.halt");
  EXPECT_EQ(CommandSubject("j", v1::TierCommand::KIND_ENABLE_RECORDING),
            CommandSubject("j", v1::TierCommand::KIND_DISABLE_RECORDING));
  EXPECT_NE(CommandSubject("j", v1::TierCommand::KIND_HALT),
            CommandSubject("j", v1::TierCommand::KIND_DISABLE_LOSS_CONTRIBUTION));
}

TEST(TierSubjectsTest, NodeNamesAreCheckedWithTheFlagNamed) {
  EXPECT_TRUE(ValidateNodeName("gpu-node-017.rack4", "--node-name").ok());
  absl::Status bad = ValidateNodeName("node a", "--node-name");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("--node-name"));
  EXPECT_THAT(bad.message(), HasSubstr("'node a'"));
  EXPECT_FALSE(ValidateNodeName("", "--node-name").ok());
}

v1::TierRecord Batch(uint64_t sequence, int64_t published) {
  v1::TierRecord record;
  record.set_job_id("j");
  record.set_node("n1");
  record.set_published_unix_ns(published);
  record.mutable_hello()->set_rank(3);
  record.mutable_hello()->set_agent_instance_id(0xabc);
  record.mutable_batch()->mutable_batch()->set_sequence(sequence);
  return record;
}

TEST(TierSubjectsTest, MessageIdsNameTheRecordNotItsPublication) {
  // A resend (another publication time, another node after the catch-up)
  // must carry the same id for JetStream to drop it.
  v1::TierRecord first = Batch(7, 100);
  v1::TierRecord resent = Batch(7, 999);
  resent.set_node("n2");
  EXPECT_EQ(RecordMsgId(first), RecordMsgId(resent));
  EXPECT_EQ(RecordMsgId(first), "j/3/0000000000000abc/b7");
  EXPECT_NE(RecordMsgId(Batch(8, 100)), RecordMsgId(first));

  v1::TierRecord open = first;
  open.mutable_opened();
  open.set_logged_unix_ns(55);
  v1::TierRecord close = first;
  close.mutable_closed();
  close.set_logged_unix_ns(55);
  EXPECT_EQ(RecordMsgId(open), "j/3/0000000000000abc/o55");
  EXPECT_EQ(RecordMsgId(close), "j/3/0000000000000abc/c55");
  StreamKey key = KeyOf(first);
  EXPECT_EQ(key.job_id, "j");
  EXPECT_EQ(key.rank, 3u);
  EXPECT_EQ(key.instance, 0xabcu);
}

}  // namespace
}  // namespace trainscope::tier
