// Formats live-feed updates as one human-readable line each, e.g.
//   2026-11-23 08:03:12.345  #42  rank     rank 3 connected host=h pid=12 events=12,345 (+1,204/s)
//   drops=0 2026-11-23 08:03:12.400  #43  job      job J running ranks=4/4 events=49,380 (4,816/s)
//   recording=on 2026-11-23 08:03:13.001  #44  command  halt by a@h reached=4 reason="too slow"
// A rank's rate is the change in its events over the change in its
// last-seen time since the previous update (or snapshot) of that rank.
//
// Usage:
//   UpdateFormatter formatter(absl::LocalTimeZone());
//   formatter.Seed(snapshot_job_status);   // optional: rates from the first update on
//   out << formatter.Format(update) << "\n";
//
// Threading: stateful (per-rank history); one thread.
#ifndef TRAINSCOPE_CLI_UPDATE_FORMATTER_H_
#define TRAINSCOPE_CLI_UPDATE_FORMATTER_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::cli {

class UpdateFormatter {
 public:
  explicit UpdateFormatter(absl::TimeZone zone) : zone_(zone) {}

  // Remembers every rank's counters from a snapshot.
  void Seed(const trainscope::v1::JobStatus& status);
  // One line, no trailing newline.
  std::string Format(const trainscope::v1::FeedUpdate& update);

  // One of kKinds, or "empty": the topic kind of an update.
  static std::string KindOf(const trainscope::v1::FeedUpdate& update);
  static constexpr std::array<const char*, 9> kKinds = {
      "job", "rank", "command", "alert", "step", "clock", "ops", "loss", "maps"};

 private:
  struct RankHistory {
    uint64_t events = 0;
    int64_t last_seen_unix_ns = 0;
  };
  std::string FormatRank(const trainscope::v1::RankStatus& rank);

  absl::TimeZone zone_;
  std::map<uint32_t, RankHistory> ranks_;
};

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_UPDATE_FORMATTER_H_
