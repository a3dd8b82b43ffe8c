#include "trainscope/viewer/jobs_model.h"

#include <algorithm>

namespace trainscope::viewer {

void JobsModel::Update(const JobRecord& job) {
  jobs_[job.job_id].job = job;
  ++version_;
}

void JobsModel::OnStep(const std::string& job_id, uint64_t step, int64_t end_ns) {
  Entry& entry = jobs_[job_id];
  if (entry.job.job_id.empty()) entry.job.job_id = job_id;
  auto& recent = entry.recent_steps;
  auto position = std::lower_bound(recent.begin(), recent.end(), std::make_pair(step, INT64_MIN));
  if (position != recent.end() && position->first == step) return;
  recent.insert(position, {step, end_ns});
  while (recent.size() > kRateWindow) recent.pop_front();
  ++version_;
}

std::vector<JobsModel::Row> JobsModel::Rows() const {
  std::vector<Row> rows;
  for (const auto& [id, entry] : jobs_) {
    Row row;
    row.job_id = id;
    row.state = JobStateName(entry.job.state);
    row.ranks = std::to_string(entry.job.ranks_connected) + "/" +
                std::to_string(entry.job.world_size) + " connected";
    row.recording = entry.job.recording;
    row.events_per_second = entry.job.events_per_second;
    const auto& recent = entry.recent_steps;
    if (!recent.empty()) row.newest_step = recent.back().first;
    // A job that ended (finished, halted, lost) has no step rate: its last
    // one would read as if it still trained.
    const bool ended = entry.job.state == JobStateKind::kFinished ||
                       entry.job.state == JobStateKind::kHalted ||
                       entry.job.state == JobStateKind::kLost;
    if (recent.size() >= 2 && !ended) {
      const int64_t span = recent.back().second - recent.front().second;
      const uint64_t steps = recent.back().first - recent.front().first;
      if (span > 0) row.steps_per_second = static_cast<double>(steps) * 1e9 / span;
    }
    if (stale_note_.has_value()) {
      // A job whose feed went silent must not go on looking like it runs.
      row.stale = true;
      row.state = "last seen " + row.state + " " + *stale_note_;
      row.ranks = "last seen " + row.ranks;
      row.steps_per_second.reset();
    }
    for (const RankRecord& rank : entry.job.ranks) {
      row.rank_rows.push_back(
          {rank.rank, rank.host, rank.pid, rank.connected, rank.events_received});
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

void JobsModel::SetStale(std::optional<std::string> note) {
  if (note == stale_note_) return;
  stale_note_ = std::move(note);
  ++version_;
}

const JobRecord* JobsModel::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second.job;
}

}  // namespace trainscope::viewer
