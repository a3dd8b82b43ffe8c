// Follows one job on the live feed the way feed.proto prescribes: subscribe to
// "<job>/" first, then take a snapshot, then pass on every update whose
// sequence is the next one. An update past the next one means ZeroMQ dropped
// some (slow subscriber): the follower reports the gap and re-snapshots. An
// update numbered 1 after later ones means the collector restarted: it
// re-snapshots too.
//
// Usage:
//   FeedFollower follower(&source, "job-1", absl::Seconds(10));
//   std::vector<FeedFollower::Event> events;
//   RETURN_IF_ERROR(follower.Start(&events));          // kSnapshot or kNotice
//   while (...) {
//     ASSIGN_OR_RETURN(bool got, follower.Poll(absl::Milliseconds(200), &events));
//     for (auto& e : events) ...; events.clear();
//   }
//
// Threading: one thread, the same that owns `source`.
#ifndef TRAINSCOPE_CLIENT_FEED_FOLLOWER_H_
#define TRAINSCOPE_CLIENT_FEED_FOLLOWER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/client/feed_source.h"
#include "trainscope/v1/feed.pb.h"
#include "trainscope/v1/status.pb.h"

namespace trainscope::client {

class FeedFollower {
 public:
  struct Event {
    enum Type {
      kSnapshot,  // `snapshot` holds the job's state as of snapshot.feed_sequence()
      kUpdate,    // `update` is the next update in sequence
      kGap,       // updates `expected` .. `received` - 1 were lost
      kNotice,    // `text` explains something the user should know (not fatal)
    };
    Type type = kNotice;
    trainscope::v1::JobStatus snapshot;
    trainscope::v1::FeedUpdate update;
    uint64_t expected = 0;
    uint64_t received = 0;
    std::string text;
  };

  FeedFollower(FeedSource* source, std::string job_id, absl::Duration snapshot_timeout);

  // Subscribes, then takes the first snapshot. Fails when the feed or the
  // snapshot server cannot be used; an unknown job is not an error (it may
  // start later): a kNotice says so and following starts from sequence 0.
  absl::Status Start(std::vector<Event>* events);

  // Waits up to `timeout` for one message and appends the events it caused.
  // Returns whether a message arrived (so the caller can tell a quiet feed).
  absl::StatusOr<bool> Poll(absl::Duration timeout, std::vector<Event>* events);

  uint64_t last_sequence() const { return last_sequence_; }
  uint64_t gaps() const { return gaps_; }
  uint64_t snapshots() const { return snapshots_; }

 private:
  void HandleUpdate(trainscope::v1::FeedUpdate update, std::vector<Event>* events);
  // Takes a snapshot and, when it names the job, restarts counting from it.
  // Returns false (after a kNotice) when no usable snapshot came.
  // Folds `snapshot` in (counts it, resets the sequence); false when it lacks this job.
  bool ApplySnapshot(const trainscope::v1::FeedSnapshot& snapshot, std::vector<Event>* events);
  bool Resnapshot(std::vector<Event>* events);

  FeedSource* source_;
  std::string job_id_;
  absl::Duration snapshot_timeout_;
  uint64_t last_sequence_ = 0;
  uint64_t gaps_ = 0;
  uint64_t snapshots_ = 0;
  uint64_t accepted_since_snapshot_ = 0;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_FEED_FOLLOWER_H_
