#include "trainscope/cli/update_formatter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainscope/cli/formatting.h"

namespace trainscope::cli {

void UpdateFormatter::Seed(const trainscope::v1::JobStatus& status) {
  for (const trainscope::v1::RankStatus& rank : status.ranks()) {
    ranks_[rank.rank()] = {rank.events_received(), rank.last_seen_unix_ns()};
  }
}

std::string UpdateFormatter::KindOf(const trainscope::v1::FeedUpdate& update) {
  switch (update.body_case()) {
    case trainscope::v1::FeedUpdate::kJob:
      return "job";
    case trainscope::v1::FeedUpdate::kRank:
      return "rank";
    case trainscope::v1::FeedUpdate::kCommand:
      return "command";
    case trainscope::v1::FeedUpdate::kAlert:
      return "alert";
    case trainscope::v1::FeedUpdate::kStep:
      return "step";
    case trainscope::v1::FeedUpdate::kClocks:
      return "clock";
    case trainscope::v1::FeedUpdate::kOperators:
      return "ops";
    case trainscope::v1::FeedUpdate::kLoss:
      return "loss";
    case trainscope::v1::FeedUpdate::kItemSnapshot:
      return "maps";
    default:
      return "empty";
  }
}

std::string UpdateFormatter::FormatRank(const trainscope::v1::RankStatus& rank) {
  const char* state =
      rank.connected() ? "connected" : (rank.said_goodbye() ? "said goodbye" : "disconnected");
  std::string line =
      absl::StrCat("rank ", rank.rank(), " ", state, " host=", rank.host(), " pid=", rank.pid(),
                   " events=", FormatCount(rank.events_received()));
  auto previous = ranks_.find(rank.rank());
  if (previous != ranks_.end()) {
    const int64_t elapsed_ns = rank.last_seen_unix_ns() - previous->second.last_seen_unix_ns;
    if (elapsed_ns > 0 && rank.events_received() >= previous->second.events) {
      const double rate = static_cast<double>(rank.events_received() - previous->second.events) *
                          1e9 / static_cast<double>(elapsed_ns);
      absl::StrAppend(&line, " (+", FormatRate(rate), ")");
    }
  }
  absl::StrAppend(&line, " drops=", FormatDrops(rank.agent_drops()));
  if (rank.batches_refused() != 0) {
    absl::StrAppend(&line, " refused=", FormatCount(rank.batches_refused()));
  }
  if (rank.restart_count() != 0) absl::StrAppend(&line, " restarts=", rank.restart_count());
  ranks_[rank.rank()] = {rank.events_received(), rank.last_seen_unix_ns()};
  return line;
}

std::string UpdateFormatter::Format(const trainscope::v1::FeedUpdate& update) {
  std::string body;
  switch (update.body_case()) {
    case trainscope::v1::FeedUpdate::kJob: {
      const trainscope::v1::JobSummary& job = update.job();
      body = absl::StrCat(
          "job ", job.job_id(), " ", JobStateName(job.state()), " ranks=", job.ranks_connected(),
          "/", job.world_size(), " events=", FormatCount(job.events_received()), " (",
          FormatRate(job.events_per_second()), ") recording=", job.recording() ? "on" : "off");
      break;
    }
    case trainscope::v1::FeedUpdate::kRank:
      body = FormatRank(update.rank());
      break;
    case trainscope::v1::FeedUpdate::kCommand: {
      const trainscope::v1::CommandRecord& command = update.command();
      body = absl::StrCat(command.command(), " by ",
                          command.requested_by().empty() ? "?" : command.requested_by(),
                          " reached=", command.ranks_reached());
      if (!command.reason().empty()) absl::StrAppend(&body, " reason=", Quote(command.reason()));
      if (command.halt_id() != 0) absl::StrAppend(&body, " halt_id=", command.halt_id());
      if (command.halt_at_step() != 0) absl::StrAppend(&body, " at_step=", command.halt_at_step());
      break;
    }
    case trainscope::v1::FeedUpdate::kAlert:
      body = FormatAlert(update.alert());
      break;
    case trainscope::v1::FeedUpdate::kStep: {
      const trainscope::v1::StepReport& step = update.step();
      body = absl::StrFormat("step %d closed: %d devices, %.2f ms", step.step(),
                             step.devices_size(), (step.end_ns() - step.start_ns()) / 1e6);
      break;
    }
    case trainscope::v1::FeedUpdate::kClocks:
      body = absl::StrCat("clock estimates of ", update.clocks().devices_size(), " devices");
      break;
    case trainscope::v1::FeedUpdate::kOperators:
      body = absl::StrCat(update.operators().operators_size(), " aligned operators");
      break;
    case trainscope::v1::FeedUpdate::kLoss: {
      const trainscope::v1::LossState& loss = update.loss();
      body = absl::StrCat("epoch ", loss.epoch(), " iteration ", loss.iteration(), ": top ",
                          loss.items_size(), " items by loss contribution");
      if (!loss.items().empty()) {
        const trainscope::v1::DifficultItem& top = loss.items(0);
        absl::StrAppend(&body, absl::StrFormat(", first item %d (%.4g, label %d, predicted %d)",
                                               top.item(), top.contribution(), top.label(),
                                               top.prediction()));
      }
      break;
    }
    case trainscope::v1::FeedUpdate::kItemSnapshot: {
      const trainscope::v1::ItemSnapshot& s = update.item_snapshot();
      body = absl::StrFormat("item %d maps at iteration %d (epoch %d, rank %d): %d layers",
                             s.item(), s.iteration(), s.epoch(), s.rank(), s.maps_size());
      break;
    }
    default:
      body = "(update with no body)";
  }
  return absl::StrFormat("%s  #%d  %-7s  %s", FormatTimestamp(update.published_unix_ns(), zone_),
                         update.sequence(), KindOf(update), body);
}

}  // namespace trainscope::cli
