// Decides when a rank whose stream closed without goodbye is a lost device.
//
// Not at once: at the end of a job every rank's stream closes within a
// moment, and one that could not say goodbye has not failed its peers. A
// pending loss is judged each time what it reads changes:
//  - a peer said goodbye (without error) within `grace` of the loss: the job
//    is ending; the loss is forgotten;
//  - a peer reported `grace_steps` steps past the rank's last, or a peer is
//    still connected `grace` after the loss: the peers went on without it;
//    it is lost;
//  - no rank is connected any more: every rank vanished. The first to go
//    (the first close read while peers were still connected) is the cause
//    (its peers failed in a collective or were killed by the launcher),
//    named with every rank that went within `together` of it: a peer that
//    aborts in the broken collective, or that the launcher terminates, goes
//    milliseconds later, and neither the order the closes are read in nor
//    the steps they flushed tell them apart. The rest are forgotten; a job
//    of one rank names nobody.
// See docs/alerts.md (lost_device).
//
// Usage:
//   RankLossJudge judge(options);
//   judge.OnLost(rank, progress.LastStepOf(rank), now_ns, /*peers_connected=*/...);
//   for (const RankLossJudge::Verdict& v : judge.Judge(now_ns, ranks, progress, connected))
//     RaiseLostDevice(v.rank, v.last_step);
//   wake the thread by judge.NextDeadline() to judge again when a grace ends
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_RANK_LOSS_JUDGE_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_RANK_LOSS_JUDGE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/time/time.h"
#include "trainscope/collector/pipeline/rank_step_progress.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class RankLossJudge {
 public:
  struct Options {
    absl::Duration grace = absl::Seconds(10);
    uint64_t grace_steps = 3;
    absl::Duration together = absl::Seconds(1);
  };
  struct Verdict {
    uint32_t rank = 0;
    uint64_t last_step = 0;  // the highest step mark it sent
  };

  explicit RankLossJudge(Options options) : options_(options) {}

  // The rank's stream closed without goodbye at `now_unix_ns`;
  // `peers_connected`: another rank was connected then.
  void OnLost(uint32_t rank, uint64_t last_step, int64_t now_unix_ns, bool peers_connected);
  void Forget(uint32_t rank) { pending_.erase(rank); }  // it came back
  void Clear() { pending_.clear(); }                     // e.g. a halt: ranks stop on purpose
  bool empty() const { return pending_.empty(); }

  // The losses judged lost now (each forgotten once judged either way).
  // `ranks`: every rank's status (goodbyes and when they were last seen);
  // `anyone_connected`: some rank's stream is open.
  std::vector<Verdict> Judge(int64_t now_unix_ns,
                             const std::map<uint32_t, trainscope::v1::RankStatus>& ranks,
                             const RankStepProgress& progress, bool anyone_connected);

  // When a pending loss's grace ends (InfiniteFuture: none pending).
  absl::Time NextDeadline() const;

 private:
  struct PendingLoss {
    uint64_t last_step = 0;
    int64_t lost_unix_ns = 0;
    bool peers_connected = false;
  };

  const Options options_;
  std::map<uint32_t, PendingLoss> pending_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_RANK_LOSS_JUDGE_H_
