#include "trainscope/collector/pipeline/job_status_board.h"

#include <utility>

namespace trainscope::collector {

namespace v1 = ::trainscope::v1;

JobStatusBoard::JobStatusBoard() {
  auto first = std::make_shared<Edition>();
  first->rows = std::make_shared<const Rows>();
  base::MutexLock lock(&mu_);
  latest_ = std::move(first);
}

void JobStatusBoard::Publish(v1::JobStatus head, std::vector<v1::RankStatus> changed_rows) {
  auto edition = std::make_shared<Edition>();
  head.clear_ranks();
  edition->head = std::move(head);
  std::shared_ptr<const Edition> replaced;
  base::MutexLock publish_lock(&publish_mu_);
  const std::shared_ptr<const Edition> previous = Latest();
  edition->number = previous->number + 1;
  if (changed_rows.empty()) {
    edition->rows = previous->rows;
  } else {
    for (v1::RankStatus& row : changed_rows) {
      const uint32_t rank = row.rank();
      rows_by_rank_[rank] = std::make_shared<const v1::RankStatus>(std::move(row));
    }
    auto rows = std::make_shared<Rows>();
    rows->reserve(rows_by_rank_.size());
    for (const auto& [rank, row] : rows_by_rank_) rows->push_back(row);
    edition->rows = std::move(rows);
  }
  {
    base::MutexLock lock(&mu_);
    replaced = std::exchange(latest_, std::move(edition));
  }
  // The replaced edition (and rows only it held) is freed on return, outside mu_.
}

std::shared_ptr<const JobStatusBoard::Edition> JobStatusBoard::Latest() const {
  base::MutexLock lock(&mu_);
  return latest_;
}

v1::JobStatus JobStatusBoard::Read() const {
  const std::shared_ptr<const Edition> edition = Latest();
  v1::JobStatus status = edition->head;
  status.mutable_ranks()->Reserve(static_cast<int>(edition->rows->size()));
  for (const auto& row : *edition->rows) *status.add_ranks() = *row;
  return status;
}

v1::JobSummary JobStatusBoard::Summary() const { return Latest()->head.summary(); }

uint64_t JobStatusBoard::editions() const { return Latest()->number; }

}  // namespace trainscope::collector
