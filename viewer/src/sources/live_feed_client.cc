#include "trainscope/viewer/live_feed_client.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/client/feed_follower.h"
#include "trainscope/client/zmq_feed_source.h"
#include "trainscope/viewer/proto_convert.h"

namespace trainscope::viewer {

LiveFeedClient::LiveFeedClient(Options options, FeedCoalescer* out)
    : options_(std::move(options)), out_(out) {}

LiveFeedClient::~LiveFeedClient() { Stop(); }

void LiveFeedClient::Start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
}

void LiveFeedClient::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void LiveFeedClient::RequestItem(uint64_t item) {
  base::MutexLock lock(&item_mu_);
  wanted_item_ = item;
  item_requested_ = true;
}

void LiveFeedClient::FetchLoss(SnapshotQueryClient* query, FeedCoalescer::Delta* delta) {
  std::optional<uint64_t> item;
  {
    base::MutexLock lock(&item_mu_);
    item = wanted_item_;
    item_requested_ = false;
  }
  absl::StatusOr<LossData> loss = query->FetchLoss(options_.job_id, item, options_.history.timeout);
  if (!loss.ok()) {
    delta->notices.push_back(
        absl::StrCat("loss contribution unavailable: ", loss.status().message()));
    return;
  }
  delta->loss = std::move(*loss);
}

void LiveFeedClient::PostHistory(SnapshotQueryClient* query) {
  absl::StatusOr<JobData> history = query->FetchHistory(options_.job_id, options_.history);
  FeedCoalescer::Delta delta;
  if (!history.ok()) {
    delta.notices.push_back(absl::StrCat("history unavailable: ", history.status().message()));
    out_->Post(std::move(delta));
    return;
  }
  delta.reset = true;
  delta.job = history->job;
  delta.devices = std::move(history->devices);
  delta.steps = std::move(history->steps);
  if (!history->operators.operators.empty()) {
    delta.operator_batches.push_back(std::move(history->operators));
  }
  delta.alerts = std::move(history->alerts);
  FetchLoss(query, &delta);
  out_->Post(std::move(delta));
}

LinkReport LiveFeedClient::link() const {
  base::MutexLock lock(&link_mu_);
  return link_;
}

void LiveFeedClient::SetLink(LinkReport::Phase phase, const std::string& error) {
  base::MutexLock lock(&link_mu_);
  link_.phase = phase;
  link_.error = error;
  if (phase == LinkReport::Phase::kRetrying) {
    ++link_.attempts;
  } else if (phase == LinkReport::Phase::kFollowing) {
    link_.attempts = 0;
  }
}

void LiveFeedClient::Touch(bool update) {
  const int64_t now = absl::ToUnixNanos(absl::Now());
  base::MutexLock lock(&link_mu_);
  link_.last_contact_ns = now;
  if (update) link_.last_update_ns = now;
}

void LiveFeedClient::Run() {
  absl::Duration backoff = absl::Milliseconds(250);
  bool told = false;  // one notice per outage, not one per attempt
  while (!stop_.load()) {
    const uint64_t connections = connections_.load();
    absl::Status status = Follow();
    if (stop_.load()) break;
    if (connections_.load() != connections) {  // it was up: start the pauses over
      backoff = absl::Milliseconds(250);
      told = false;
    }
    SetLink(LinkReport::Phase::kRetrying, std::string(status.message()));
    if (!told) {
      told = true;
      FeedCoalescer::Delta delta;
      delta.notices.push_back(absl::StrCat("feed lost: ", status.message(), "; retrying"));
      out_->Post(std::move(delta));
    }
    // Sleeps in short slices so that Stop is not kept waiting.
    for (absl::Time until = absl::Now() + backoff; absl::Now() < until && !stop_.load();) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

absl::Status LiveFeedClient::Follow() {
  client::ZmqFeedSource source(options_.feed, options_.snapshot, &stop_, options_.security);
  SnapshotQueryClient query(options_.snapshot, &stop_, options_.security);
  client::FeedFollower follower(&source, options_.job_id, options_.connect_timeout);
  std::vector<client::FeedFollower::Event> events;
  JobRecord job;
  job.job_id = options_.job_id;
  std::map<uint32_t, RankRecord> ranks;
  auto post_job = [&](FeedCoalescer::Delta* delta) {
    job.ranks.clear();
    for (const auto& [rank, record] : ranks) job.ranks.push_back(record);
    delta->job = job;
  };

  if (absl::Status status = follower.Start(&events); !status.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot follow the feed: ", status.message()));
  }
  connections_.fetch_add(1);
  SetLink(LinkReport::Phase::kFollowing, "");
  Touch(/*update=*/true);
  absl::Time last_contact = absl::Now();
  bool need_history = true;
  while (!stop_.load()) {
    FeedCoalescer::Delta delta;
    for (client::FeedFollower::Event& event : events) {
      switch (event.type) {
        case client::FeedFollower::Event::kSnapshot: {
          job = ConvertJob(event.snapshot);
          ranks.clear();
          for (const RankRecord& rank : job.ranks) ranks[rank.rank] = rank;
          post_job(&delta);
          break;
        }
        case client::FeedFollower::Event::kGap:
          gaps_.fetch_add(1);
          need_history = true;  // steps and operators in the gap are lost
          delta.notices.push_back(absl::StrCat("feed gap: updates ", event.expected, "..",
                                               event.received - 1, " lost; refetching"));
          break;
        case client::FeedFollower::Event::kNotice:
          delta.notices.push_back(event.text);
          break;
        case client::FeedFollower::Event::kUpdate: {
          updates_.fetch_add(1);
          const trainscope::v1::FeedUpdate& update = event.update;
          switch (update.body_case()) {
            case trainscope::v1::FeedUpdate::kJob: {
              JobRecord summary = ConvertJobSummary(update.job());
              job = summary;
              post_job(&delta);
              break;
            }
            case trainscope::v1::FeedUpdate::kRank:
              ranks[update.rank().rank()] = ConvertRank(update.rank());
              post_job(&delta);
              break;
            case trainscope::v1::FeedUpdate::kCommand:
              delta.notices.push_back(
                  absl::StrCat(update.command().command(), " by ", update.command().requested_by(),
                               ": ", update.command().reason(), " (",
                               update.command().ranks_reached(), " ranks reached)"));
              break;
            case trainscope::v1::FeedUpdate::kStep:
              delta.steps.push_back(ConvertStep(update.step()));
              break;
            case trainscope::v1::FeedUpdate::kOperators:
              delta.operator_batches.push_back(ConvertOperators(update.operators()));
              break;
            case trainscope::v1::FeedUpdate::kAlert:
              // The list shows causes as they are raised; clears are in `trainscope alerts`.
              if (update.alert().state() == trainscope::v1::ALERT_STATE_RAISED) {
                delta.alerts.push_back(ConvertAlert(update.alert()));
              }
              break;
            case trainscope::v1::FeedUpdate::kLoss:
              // Each replaces the last: only the newest list is shown.
              if (!delta.loss.has_value()) delta.loss.emplace();
              delta.loss->state = ConvertLossState(update.loss());
              break;
            case trainscope::v1::FeedUpdate::kItemSnapshot:
              delta.item_snapshots.push_back(ConvertItemSnapshot(update.item_snapshot()));
              break;
            default:
              break;  // clocks: shown through the aligned operators
          }
          break;
        }
      }
    }
    events.clear();
    const bool has_content = delta.job.has_value() || !delta.steps.empty() ||
                             !delta.operator_batches.empty() || !delta.notices.empty() ||
                             !delta.alerts.empty() || delta.loss.has_value() ||
                             !delta.item_snapshots.empty();
    if (has_content) out_->Post(std::move(delta));
    if (need_history) {
      need_history = false;
      PostHistory(&query);  // also answers a pending item request
    }
    bool item_requested;
    {
      base::MutexLock lock(&item_mu_);
      item_requested = item_requested_;
    }
    if (item_requested) {
      FeedCoalescer::Delta answer;
      FetchLoss(&query, &answer);
      out_->Post(std::move(answer));
    }
    absl::StatusOr<bool> got = follower.Poll(absl::Milliseconds(100), &events);
    if (!got.ok() && got.status().code() != absl::StatusCode::kInvalidArgument) {
      return absl::UnavailableError(absl::StrCat("feed stopped: ", got.status().message()));
    }
    if (got.ok() && *got) {
      Touch(/*update=*/true);
      last_contact = absl::Now();
    } else if (absl::Now() - last_contact > options_.probe_after) {
      // A killed collector's feed is only silent, like a quiet job's: ask.
      trainscope::v1::SnapshotRequest probe;
      probe.set_job_id(options_.job_id);
      absl::StatusOr<trainscope::v1::FeedSnapshot> reply =
          query.Request(probe, options_.probe_timeout);
      if (stop_.load()) break;
      if (!reply.ok()) {
        return absl::UnavailableError(absl::StrCat("the collector at ", options_.snapshot,
                                                   " stopped answering: ", reply.status().message()));
      }
      Touch(/*update=*/false);
      last_contact = absl::Now();
    }
  }
  return absl::OkStatus();
}

}  // namespace trainscope::viewer
