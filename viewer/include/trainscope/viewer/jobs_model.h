// The collector's jobs as table rows: state, ranks, step rate, recording.
// The step rate is measured from the closing times of the newest steps (on
// the job's reference clock), so it is the training's rate, not the feed's.
//
// Usage:
//   JobsModel jobs;
//   jobs.Update(job_record);
//   jobs.OnStep("job-1", 42, end_ns);
//   for (const JobsModel::Row& row : jobs.Rows()) ...
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_JOBS_MODEL_H_
#define TRAINSCOPE_VIEWER_JOBS_MODEL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class JobsModel {
 public:
  struct RankRow {
    uint32_t rank = 0;
    std::string host;
    uint32_t pid = 0;
    bool connected = false;
    uint64_t events = 0;
  };
  struct Row {
    std::string job_id;
    std::string state;
    std::string ranks;  // "4/4 connected"
    std::optional<double> steps_per_second;
    std::optional<uint64_t> newest_step;
    bool recording = false;
    double events_per_second = 0;
    std::vector<RankRow> rank_rows;
    // The feed is not live: state, ranks and rate are only what was last
    // seen, and say so (the table greys the row).
    bool stale = false;
  };

  void Update(const JobRecord& job);
  void OnStep(const std::string& job_id, uint64_t step, int64_t end_ns);
  std::vector<Row> Rows() const;
  const JobRecord* Find(const std::string& job_id) const;
  // Marks every row as last seen `note` (e.g. "12 s ago"); nullopt: live.
  void SetStale(std::optional<std::string> note);
  uint64_t version() const { return version_; }

  // Steps whose closing times the rate is measured over.
  static constexpr size_t kRateWindow = 20;

 private:
  struct Entry {
    JobRecord job;
    std::deque<std::pair<uint64_t, int64_t>> recent_steps;  // (step, end_ns), by step
  };
  std::map<std::string, Entry> jobs_;
  std::optional<std::string> stale_note_;
  uint64_t version_ = 0;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_JOBS_MODEL_H_
