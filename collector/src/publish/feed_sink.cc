#include "trainscope/collector/publish/feed_sink.h"

#include "absl/strings/str_cat.h"

namespace trainscope::collector {

std::string FeedTopic(const v1::FeedUpdate& update) {
  const char* kind = "job";
  switch (update.body_case()) {
    case v1::FeedUpdate::kRank:
      kind = "rank";
      break;
    case v1::FeedUpdate::kCommand:
      kind = "command";
      break;
    case v1::FeedUpdate::kStep:
      kind = "step";
      break;
    case v1::FeedUpdate::kClocks:
      kind = "clock";
      break;
    case v1::FeedUpdate::kOperators:
      kind = "ops";
      break;
    case v1::FeedUpdate::kAlert:
      kind = "alert";
      break;
    case v1::FeedUpdate::kLoss:
      kind = "loss";
      break;
    case v1::FeedUpdate::kItemSnapshot:
      kind = "maps";
      break;
    default:
      break;
  }
  return FeedTopicOf(update.job_id(), kind);
}

std::string FeedTopicOf(absl::string_view job_id, absl::string_view kind) {
  return absl::StrCat(job_id, "/", kind);
}

}  // namespace trainscope::collector
