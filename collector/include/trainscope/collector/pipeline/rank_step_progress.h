// How far each rank of a job has got, and how fast: the highest step number
// in the STEP_MARK events it sent, and the time its recent steps took. A halt
// stops every rank a margin past the furthest one, the margin long enough in
// time for the halt to reach a rank that is behind in reading it; a lost rank
// is judged by whether its peers went on past it.
//
// Usage:
//   RankStepProgress progress;
//   if (progress.Note(rank, batch)) ...  // the batch had step marks
//   progress.LastStepOf(rank);           // 0: none seen
//   progress.Highest();
//   progress.ShortestStepNs();           // 0: not known yet
//
// This run of the collector only: not recovered from the log (a recovered
// job's ranks report their steps again once they reconnect).
//
// Threading: not thread-safe; owned by the job's pipeline thread.
#ifndef TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_
#define TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

class RankStepProgress {
 public:
  // Folds in the batch's step marks; true when it had any.
  bool Note(uint32_t rank, const trainscope::v1::EventBatch& batch);

  uint64_t LastStepOf(uint32_t rank) const;  // 0: no step mark seen
  uint64_t Highest() const;                  // over every rank; 0: none
  // The highest step of any rank but `rank`; nullopt when no other rank sent one.
  std::optional<uint64_t> HighestOfOthers(uint32_t rank) const;
  // The mean time per step over each rank's recent marks (its own clock),
  // the shortest over the ranks; 0 until some rank sent two marks.
  int64_t ShortestStepNs() const;
  bool empty() const { return by_rank_.empty(); }

 private:
  // The newest kRecentMarks step marks of a rank, oldest first once full.
  static constexpr size_t kRecentMarks = 8;
  struct Mark {
    uint64_t step = 0;
    int64_t time_ns = 0;
  };
  struct Rank {
    uint64_t highest = 0;
    std::array<Mark, kRecentMarks> recent;
    size_t marks = 0;  // how many were ever noted; recent[marks % kRecentMarks] is next
  };
  std::map<uint32_t, Rank> by_rank_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PIPELINE_RANK_STEP_PROGRESS_H_
