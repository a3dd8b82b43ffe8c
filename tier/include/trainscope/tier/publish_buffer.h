// The node collector's bounded queue of records waiting for JetStream.
//
// Usage:
//   PublishBuffer buffer(256 << 20);
//   if (!buffer.Push(std::move(item))) { /* over the bound: counted, left to the catch-up */ }
//   std::vector<PublishBuffer::Item> window = buffer.Take(256, absl::Milliseconds(200));
//
// The job pipelines push (they must never block: an agent's ack waits behind
// them); one publisher thread takes windows. The bound is on payload bytes;
// a push past it is refused and counted, and the publisher reads the record
// back from the node's log later (NodePublisher's catch-up), so a NATS outage
// costs memory up to the bound and nothing else.
//
// Threading: thread-safe.
#ifndef TRAINSCOPE_TIER_PUBLISH_BUFFER_H_
#define TRAINSCOPE_TIER_PUBLISH_BUFFER_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"

namespace trainscope::tier {

class PublishBuffer {
 public:
  struct Item {
    std::string job_id;
    uint64_t index = 0;  // the record's position among the job's published records
    std::string subject;
    std::string msg_id;
    std::string payload;  // a serialized TierRecord
  };
  struct Counters {
    uint64_t queued = 0;        // items waiting now
    uint64_t queued_bytes = 0;  // their payload bytes
    uint64_t pushed = 0;        // accepted since start
    uint64_t refused = 0;       // over the bound since start
  };

  explicit PublishBuffer(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // False (and counted) when the item would take the buffer past its bound;
  // an item is always accepted into an empty buffer, so that one larger than
  // the bound still goes.
  bool Push(Item item);

  // Up to `max_items` items, oldest first, waiting up to `wait` for the first.
  std::vector<Item> Take(size_t max_items, absl::Duration wait);

  // Wakes a waiting Take (shutdown).
  void Wake();

  Counters counters() const;

 private:
  const uint64_t max_bytes_;
  mutable base::Mutex mu_;
  std::deque<Item> items_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar ready_;  // signalled when an item is pushed or on Wake
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_PUBLISH_BUFFER_H_
