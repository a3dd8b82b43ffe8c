// The names the collector tier uses on NATS JetStream (docs/scale.md): its
// streams, the subjects records and commands travel on, and the message ids
// JetStream deduplicates on.
//
// Usage:
//   std::string subject = RecordSubject(record.job_id(), record.node());
//   std::string id = RecordMsgId(record);   // Nats-Msg-Id: the same for a resend
//
// Job ids and node names may hold dots, which NATS reads as token separators;
// SubjectToken escapes them ('_' -> "__", '.' -> "_d") so that each stays one
// token and no two names share one.
//
// Threading: pure functions.
#ifndef TRAINSCOPE_TIER_TIER_SUBJECTS_H_
#define TRAINSCOPE_TIER_TIER_SUBJECTS_H_

#include <cstdint>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "trainscope/v1/tier.pb.h"

namespace trainscope::tier {

inline constexpr char kRecordsStream[] = "TRAINSCOPE_RECORDS";
inline constexpr char kCommandsStream[] = "TRAINSCOPE_COMMANDS";
inline constexpr char kAllRecords[] = "trainscope.rec.>";
inline constexpr char kAllCommands[] = "trainscope.cmd.>";

// `name` as one subject token (see above).
std::string SubjectToken(absl::string_view name);

// trainscope.rec.<job>.<node>
std::string RecordSubject(absl::string_view job_id, absl::string_view node);
// trainscope.cmd.<job>
std::string CommandSubject(absl::string_view job_id);
// trainscope.cmd.<job>.<halt|recording|loss>: one subject per job and kind of
// state, so a consumer that starts with the last message per subject (a node
// collector that starts, or gets a job's first rank, late) reads the job's
// current halt, recording and loss switch and nothing older.
std::string CommandSubject(absl::string_view job_id, trainscope::v1::TierCommand::Kind kind);

// A node name: the job id alphabet ([A-Za-z0-9._-], 1..128 characters), so
// that it reads in paths and subjects. The error names `flag`.
absl::Status ValidateNodeName(absl::string_view node, absl::string_view flag);

// The record's Nats-Msg-Id: a function of what it says, never of when it was
// published, so that a resend (a window that was not acknowledged, the
// catch-up after a restart) is recognised as the same message:
// <job>/<rank>/<instance>/b<sequence> for a batch, .../o<logged ns> and
// .../c<logged ns> for an open and a close.
std::string RecordMsgId(const trainscope::v1::TierRecord& record);

// The rank and agent instance the record belongs to (from its body).
struct StreamKey {
  std::string job_id;
  uint32_t rank = 0;
  uint64_t instance = 0;
  bool operator<(const StreamKey& o) const {
    return std::tie(job_id, rank, instance) < std::tie(o.job_id, o.rank, o.instance);
  }
};
StreamKey KeyOf(const trainscope::v1::TierRecord& record);

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_TIER_SUBJECTS_H_
