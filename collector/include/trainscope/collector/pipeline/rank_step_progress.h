// How far each rank of a job has got: the highest step number in the
// STEP_MARK events it sent. A halt stops every rank a margin past the
// furthest one; a lost rank is judged by whether its peers went on past it.
//
// Usage:
//   RankStepProgress progress;
//   if (progress.Note(rank, batch)) ...  // the batch had step marks
//   progress.LastStepOf(rank);           // 0: none seen
//   progress.Highest();
//
// This run of the collector only: not recovered from the log (a recovered
// job's ranks report their steps again once they reconnect).
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_

#include <cstdint>
#include <map>

#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

class RankStepProgress {
 public:
  // Folds in the batch's step marks; true when it had any.
  bool Note(uint32_t rank, const trainscope::v1::EventBatch& batch);

  uint64_t LastStepOf(uint32_t rank) const;  // 0: no step mark seen
  uint64_t Highest() const;                  // over every rank; 0: none
  bool empty() const { return by_rank_.empty(); }
  const std::map<uint32_t, uint64_t>& by_rank() const { return by_rank_; }

 private:
  std::map<uint32_t, uint64_t> by_rank_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_
