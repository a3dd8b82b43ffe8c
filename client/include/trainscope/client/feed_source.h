// Where a FeedFollower gets live updates and snapshots from. The production
// implementation is ZmqFeedSource; FeedFollower's tests drive a scripted one.
//
// Threading: implementations belong to one thread.
#ifndef TRAINSCOPE_CLIENT_FEED_SOURCE_H_
#define TRAINSCOPE_CLIENT_FEED_SOURCE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::client {

class FeedSource {
 public:
  virtual ~FeedSource() = default;

  // Starts receiving updates whose topic begins with `topic_prefix`.
  virtual absl::Status Subscribe(const std::string& topic_prefix) = 0;
  // The next update, or nullopt when none arrived within `timeout`.
  // INVALID_ARGUMENT: a malformed message was received and dropped (the
  // caller may go on); any other error is fatal for the source.
  virtual absl::StatusOr<std::optional<trainscope::v1::FeedUpdate>> Receive(
      absl::Duration timeout) = 0;
  // Asks the collector for the current state of `job_id`; UNAVAILABLE when
  // no answer came within `timeout`.
  virtual absl::StatusOr<trainscope::v1::FeedSnapshot> RequestSnapshot(const std::string& job_id,
                                                                       absl::Duration timeout) = 0;
  // Where the updates come from, for messages ("tcp://127.0.0.1:7071").
  virtual std::string Describe() const = 0;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_FEED_SOURCE_H_
