// The sender's batches between encoding and the collector's acknowledgement:
// numbered, counted against the memory bound, cut to the collector's message
// limit, written in order, and written again from the first unacknowledged
// one on a new stream.
//
// Usage (sender thread):
//   BatchQueue queue(kMaxMessageBytes);
//   queue.Push(encoder.FinishEncoded(strings, drops), bound);   // numbered 1, 2, ...
//   while (const std::string* m = queue.NextToSend()) {
//     if (!transport->WriteSerialized(*m)) break;
//     queue.MarkSent();
//   }
//   queue.Acknowledge(ack.up_to_sequence());       // collector's Ack
//   queue.Refuse(reject.sequence());               // collector's Reject
//   queue.RewindSends();                           // a new stream resends the rest
//   queue.SetMessageLimit(hello_ack.max_message_bytes());   // cuts queued ones again
//
// Each entry is a serialized AgentMessage (the batch, field 2, with its
// sequence appended), ready for the transport: the fast path never builds or
// sizes a protobuf message. A batch over the limit (a collector with a small
// --max-message-bytes) is parsed and cut by SplitBatch; an event that alone
// exceeds the limit is dropped and counted as buffer_full, as is a batch that
// would take the queue's bytes past the caller's memory bound. Nothing is
// lost uncounted.
//
// Threading: one owner thread (the sender's) for everything but counters(),
// which any thread may call (relaxed atomics).
#ifndef TRAINSCOPE_AGENT_SRC_BATCH_QUEUE_H_
#define TRAINSCOPE_AGENT_SRC_BATCH_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "batch_encoder.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

class BatchQueue {
 public:
  struct Counters {
    uint64_t dropped_buffer_full = 0;  // events: over the memory bound or the message limit
    uint64_t events_acked = 0;
    uint64_t batches_acked = 0;
    uint64_t events_refused = 0;
  };
  struct PushResult {
    bool all_queued = true;         // false: the memory bound left events out (counted)
    uint64_t events_too_large = 0;  // each alone over the message limit (counted)
  };

  // `max_message_bytes`: the largest AgentMessage the collector takes.
  explicit BatchQueue(uint64_t max_message_bytes);

  // Queues `batch`, cut to the message limit, numbering its pieces.
  PushResult Push(EncodedBatch batch, uint64_t bound);
  // Queues a batch without events (loss reports) whole; false (nothing
  // queued, nothing counted) when it would pass `bound`.
  bool PushWhole(const v1::EventBatch& batch, uint64_t bound);

  // A HelloAck's max_message_bytes (0: unchanged; never above what gRPC may
  // send). When queued batches no longer fit, cuts them again and renumbers
  // them from the first one's sequence (the collector holds none of them: it
  // asks to resume after it). Returns the events dropped as too large.
  uint64_t SetMessageLimit(uint64_t max_message_bytes);
  uint64_t max_message_bytes() const { return max_message_bytes_; }

  // Drops every batch up to `up_to_sequence` (durable at the collector).
  void Acknowledge(uint64_t up_to_sequence);
  // Drops the refused batch; its event count, or nothing when not queued.
  std::optional<uint64_t> Refuse(uint64_t sequence);

  // The next message to write on this stream, or null.
  const std::string* NextToSend() const {
    return next_to_send_ < entries_.size() ? &entries_[next_to_send_].message : nullptr;
  }
  void MarkSent() { ++next_to_send_; }
  void RewindSends() { next_to_send_ = 0; }

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t unacknowledged_events() const;
  void Clear();

  Counters counters() const;

 private:
  struct Entry {
    std::string message;  // the framed AgentMessage
    size_t body_offset = 0;
    size_t body_size = 0;  // the EventBatch bytes without the sequence
    uint64_t sequence = 0;
    uint64_t events = 0;
  };

  // The largest EventBatch (without framing and sequence) that fits.
  uint64_t BodyLimit() const;
  // `body` cut to BodyLimit(): the pieces' bodies; `too_large` counts events dropped.
  std::deque<EncodedBatch> Cut(EncodedBatch body, uint64_t* too_large) const;
  Entry Frame(const std::string& body, uint64_t events, uint64_t sequence) const;
  static void Add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  uint64_t max_message_bytes_;
  std::deque<Entry> entries_;
  size_t next_to_send_ = 0;  // index of the first entry not yet written on this stream
  uint64_t bytes_ = 0;
  uint64_t next_sequence_ = 1;

  std::atomic<uint64_t> dropped_buffer_full_{0};
  std::atomic<uint64_t> events_acked_{0};
  std::atomic<uint64_t> batches_acked_{0};
  std::atomic<uint64_t> events_refused_{0};
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_BATCH_QUEUE_H_
