#include "trainscope/collector/pipeline/rank_loss_judge.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace trainscope::collector {

void RankLossJudge::OnLost(uint32_t rank, uint64_t last_step, int64_t now_unix_ns,
                           bool peers_connected) {
  pending_[rank] = PendingLoss{last_step, now_unix_ns, peers_connected};
}

std::vector<RankLossJudge::Verdict> RankLossJudge::Judge(
    int64_t now_unix_ns, const std::map<uint32_t, v1::RankStatus>& ranks,
    const RankStepProgress& progress, bool anyone_connected) {
  std::vector<Verdict> lost;
  if (pending_.empty()) return lost;
  const int64_t grace_ns = absl::ToInt64Nanoseconds(options_.grace);
  const int64_t together_ns = absl::ToInt64Nanoseconds(options_.together);
  int64_t first_lost = INT64_MAX;
  for (const auto& [rank, pending] : pending_) {
    if (pending.peers_connected) first_lost = std::min(first_lost, pending.lost_unix_ns);
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    const uint32_t rank = it->first;
    const PendingLoss& pending = it->second;
    bool ending = false;  // a peer said goodbye around the loss: the job is ending
    for (const auto& [peer, r] : ranks) {
      if (peer != rank && r.said_goodbye() && r.exit_error().empty() && !r.connected() &&
          std::abs(r.last_seen_unix_ns() - pending.lost_unix_ns) <= grace_ns) {
        ending = true;
      }
    }
    // A peer reported steps well past the rank's last.
    const std::optional<uint64_t> peers_highest = progress.HighestOfOthers(rank);
    const bool overtaken =
        peers_highest && *peers_highest >= pending.last_step + options_.grace_steps;
    bool raise = false;
    bool forget = ending;
    if (!ending) {
      if (overtaken || (anyone_connected && now_unix_ns - pending.lost_unix_ns >= grace_ns)) {
        raise = true;
      } else if (!anyone_connected) {
        // Within the window, whether peers were still connected when its
        // close reached this thread says nothing: the killed rank's close
        // may be read after those of the peers the launcher took down.
        raise = first_lost != INT64_MAX && pending.lost_unix_ns - first_lost <= together_ns;
        forget = true;
      }
    }
    if (raise) {
      lost.push_back({rank, pending.last_step});
      forget = true;
    }
    it = forget ? pending_.erase(it) : std::next(it);
  }
  return lost;
}

absl::Time RankLossJudge::NextDeadline() const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [rank, pending] : pending_) {
    next = std::min(next, absl::FromUnixNanos(pending.lost_unix_ns) + options_.grace);
  }
  return next;
}

}  // namespace trainscope::collector
