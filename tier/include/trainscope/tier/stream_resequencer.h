// Puts one rank stream's batches, as JetStream delivers them, back into
// sequence order and drops the copies, for the job-level collector.
//
// Usage:
//   StreamResequencer<Msg> seq;
//   seq.Add(batch.sequence(), msg);       // kHeld, or kDuplicate (msg left with the caller)
//   for (Msg& dup : seq.Start(hello_ack.resume_after_sequence())) { ... }  // already durable
//   while (auto next = seq.PopReady()) { deliver(*next); }
//
// JetStream delivers a consumer's messages in stream order, but a message whose
// ack was late comes again, after later ones, and after a restart everything
// past the ack floor comes again: the agent protocol (AgentSession) would end
// the stream on a repeat or a gap. Nothing is ready before Start (the
// pipeline's HelloAck tells where the job-level log stands); then batches come
// out strictly as last + 1, last + 2, ...; a batch at or below what came out
// is a duplicate; one past a gap waits for the gap to fill.
//
// Threading: none; the owner serialises calls.
#ifndef TRAINSCOPE_TIER_STREAM_RESEQUENCER_H_
#define TRAINSCOPE_TIER_STREAM_RESEQUENCER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace trainscope::tier {

template <typename T>
class StreamResequencer {
 public:
  enum class Offer { kHeld, kDuplicate };

  // kDuplicate leaves `item` with the caller: its sequence already came out
  // (or was durable before Start), or an item of that sequence is held.
  Offer Add(uint64_t sequence, T& item) {
    if ((started_ && sequence <= last_) || held_.count(sequence) > 0) return Offer::kDuplicate;
    held_.emplace(sequence, std::move(item));
    return Offer::kHeld;
  }

  // The last sequence already consumed downstream; returns the held items at
  // or below it (duplicates of what is durable). Later calls never go back.
  std::vector<T> Start(uint64_t last) {
    if (!started_ || last > last_) last_ = last;
    started_ = true;
    std::vector<T> stale;
    while (!held_.empty() && held_.begin()->first <= last_) {
      stale.push_back(std::move(held_.begin()->second));
      held_.erase(held_.begin());
    }
    return stale;
  }

  // The next item in sequence, if held.
  std::optional<T> PopReady() {
    if (!started_ || held_.empty() || held_.begin()->first != last_ + 1) return std::nullopt;
    std::optional<T> out(std::move(held_.begin()->second));
    held_.erase(held_.begin());
    ++last_;
    return out;
  }

  bool started() const { return started_; }
  uint64_t last() const { return last_; }       // last sequence that came out
  size_t held() const { return held_.size(); }  // waiting (a gap, or before Start)
  // Everything held, for a stream that ends.
  std::vector<T> TakeAll() {
    std::vector<T> out;
    for (auto& [sequence, item] : held_) out.push_back(std::move(item));
    held_.clear();
    return out;
  }

 private:
  bool started_ = false;
  uint64_t last_ = 0;
  std::map<uint64_t, T> held_;
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_STREAM_RESEQUENCER_H_
