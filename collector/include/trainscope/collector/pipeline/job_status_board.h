// A job's status as its pipeline thread last published it, for readers on
// any thread (`trainscope status`, `trainscope jobs`, the snapshot port,
// retention) that must not wait behind the appends and handshakes queued on
// that thread: during a 1,024-stream storm a status built on the pipeline
// thread waited there for up to 1.5 s.
//
// Usage:
//   JobStatusBoard board;
//   // The publisher (the pipeline thread), after each change:
//   v1::JobStatus head;                 // everything but the ranks
//   std::vector<v1::RankStatus> rows;   // the ranks that changed since the last Publish
//   board.Publish(std::move(head), std::move(rows));
//   // Any thread:
//   v1::JobStatus status = board.Read();      // the head and every rank, in rank order
//   v1::JobSummary summary = board.Summary();
//
// Each Publish makes a new immutable edition and swaps it in under a short
// lock; readers copy the edition's pointer under that lock and build their
// answer outside it, so neither side waits for the other's copying. A rank's
// row is shared, immutable, between editions until a Publish renews it, so a
// publish costs the rows that changed, not the job's world size; an edition
// with no renewed row shares the previous edition's row table outright.
//
// Threading: thread-safe. Publishes are serialised (one publisher: the job's
// pipeline thread); Read and Summary never wait for a Publish's copying.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BOARD_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BOARD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "trainscope/base/mutex.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::collector {

class JobStatusBoard {
 public:
  JobStatusBoard();

  JobStatusBoard(const JobStatusBoard&) = delete;
  JobStatusBoard& operator=(const JobStatusBoard&) = delete;

  // Publishes `head` (a status whose ranks are ignored) with `changed_rows`
  // replacing the rows of their ranks (a rank not published before is
  // added); the other ranks keep their rows.
  void Publish(trainscope::v1::JobStatus head,
               std::vector<trainscope::v1::RankStatus> changed_rows);

  // The latest edition: its head with every rank's row, in rank order. Empty
  // before the first Publish.
  trainscope::v1::JobStatus Read() const;
  // The latest edition's summary (cheap: no rank rows).
  trainscope::v1::JobSummary Summary() const;
  // How many editions were published (tests: a reader saw a later one).
  uint64_t editions() const;

 private:
  using Rows = std::vector<std::shared_ptr<const trainscope::v1::RankStatus>>;
  struct Edition {
    uint64_t number = 0;
    trainscope::v1::JobStatus head;  // no ranks
    std::shared_ptr<const Rows> rows;
  };

  std::shared_ptr<const Edition> Latest() const;

  // The publisher's rows by rank, which each new row table is made from.
  base::Mutex publish_mu_;
  std::map<uint32_t, std::shared_ptr<const trainscope::v1::RankStatus>> rows_by_rank_
      ABSL_GUARDED_BY(publish_mu_);

  mutable base::Mutex mu_;  // held for a pointer copy only
  std::shared_ptr<const Edition> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_JOB_STATUS_BOARD_H_
