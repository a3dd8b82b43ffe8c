// Asks the collector's snapshot server (ZeroMQ REP) for one job's recent
// history: its state, its newest steps and the aligned operators of those
// steps, converted into a JobData, through a client::SnapshotClient; and for
// its loss contribution (the difficult items, one item's map snapshots).
//
// Usage:
//   SnapshotQueryClient client("tcp://127.0.0.1:7072");
//   absl::StatusOr<JobData> data = client.FetchHistory("job-1", {.steps = 50});
//   absl::StatusOr<LossData> loss = client.FetchLoss("job-1", /*item=*/1432, absl::Seconds(5));
//
// Threading: one thread at a time.
#ifndef TRAINSCOPE_VIEWER_SNAPSHOT_QUERY_CLIENT_H_
#define TRAINSCOPE_VIEWER_SNAPSHOT_QUERY_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/client/client_security.h"
#include "trainscope/client/snapshot_client.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class SnapshotQueryClient {
 public:
  struct HistoryOptions {
    uint32_t steps = 50;               // the newest steps to fetch
    uint32_t max_operators = 150'000;  // fits the 16 MiB message cap
    absl::Duration timeout = absl::Seconds(10);
  };

  // `security`: CURVE keys when the collector requires them (client::ClientSecurity).
  SnapshotQueryClient(std::string endpoint, const std::atomic<bool>* stop = nullptr,
                      client::ClientSecurity security = {});

  absl::StatusOr<trainscope::v1::FeedSnapshot> Request(
      const trainscope::v1::SnapshotRequest& request, absl::Duration timeout);
  // NOT_FOUND names the job when the collector does not know it.
  absl::StatusOr<JobData> FetchHistory(const std::string& job_id, const HistoryOptions& options);
  // The job-wide difficult items and the snapshots of `item`; without an
  // item, those of the top item (the Monitoring View's default), if any.
  absl::StatusOr<LossData> FetchLoss(const std::string& job_id, std::optional<uint64_t> item,
                                     absl::Duration timeout);

 private:
  client::SnapshotClient snapshots_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_SNAPSHOT_QUERY_CLIENT_H_
