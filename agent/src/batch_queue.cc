#include "batch_queue.h"

#include <algorithm>
#include <utility>

#include "batch_splitter.h"
#include "trainscope/proto/protocol.h"
#include "wire_format.h"

namespace trainscope::agent {

namespace {

// AgentMessage.batch and EventBatch.sequence on the wire.
constexpr char kBatchTag = 2 << 3 | 2;
constexpr char kSequenceTag = 1 << 3 | 0;

using wire::AppendVarint;
using wire::VarintSize;

}  // namespace

BatchQueue::BatchQueue(uint64_t max_message_bytes)
    : max_message_bytes_(
          std::min<uint64_t>(max_message_bytes, static_cast<uint64_t>(kMaxMessageBytes))) {}

uint64_t BatchQueue::BodyLimit() const {
  return max_message_bytes_ > kBatchFramingBytes ? max_message_bytes_ - kBatchFramingBytes : 1;
}

BatchQueue::Entry BatchQueue::Frame(const std::string& body, uint64_t events,
                                    uint64_t sequence) const {
  Entry entry;
  entry.sequence = sequence;
  entry.events = events;
  entry.body_size = body.size();
  const uint64_t batch_size = body.size() + 1 + VarintSize(sequence);
  entry.message.reserve(1 + VarintSize(batch_size) + batch_size);
  entry.message.push_back(kBatchTag);
  AppendVarint(batch_size, &entry.message);
  entry.body_offset = entry.message.size();
  entry.message.append(body);
  // Protobuf takes fields in any order: the number goes last, so the body
  // is never rewritten when it changes.
  entry.message.push_back(kSequenceTag);
  AppendVarint(sequence, &entry.message);
  return entry;
}

std::deque<EncodedBatch> BatchQueue::Cut(EncodedBatch body, uint64_t* too_large) const {
  std::deque<EncodedBatch> pieces;
  if (body.bytes.size() <= BodyLimit() || body.events == 0) {
    pieces.push_back(std::move(body));
    return pieces;
  }
  // The slow path, for a collector with a small message limit.
  v1::EventBatch batch;
  if (!batch.ParseFromString(body.bytes)) {
    // Not ours to judge: sent whole, the collector names what is wrong.
    pieces.push_back(std::move(body));
    return pieces;
  }
  body.bytes.clear();
  body.bytes.shrink_to_fit();
  BatchSplit split = SplitBatch(std::move(batch), BodyLimit());
  *too_large += split.events_too_large;
  for (v1::EventBatch& piece : split.batches) {
    EncodedBatch encoded;
    encoded.events = static_cast<uint64_t>(piece.kind_size());
    encoded.bytes = piece.SerializeAsString();
    pieces.push_back(std::move(encoded));
  }
  return pieces;
}

BatchQueue::PushResult BatchQueue::Push(EncodedBatch batch, uint64_t bound) {
  PushResult result;
  for (EncodedBatch& piece : Cut(std::move(batch), &result.events_too_large)) {
    // The framed size: body plus at most 16 bytes of framing.
    const uint64_t size = piece.bytes.size() + 16;
    if (bytes_ + size > bound) {
      Add(dropped_buffer_full_, piece.events);
      result.all_queued = false;
      continue;
    }
    Entry entry = Frame(piece.bytes, piece.events, next_sequence_++);
    bytes_ += entry.message.capacity();
    entries_.push_back(std::move(entry));
  }
  Add(dropped_buffer_full_, result.events_too_large);
  return result;
}

bool BatchQueue::PushWhole(const v1::EventBatch& batch, uint64_t bound) {
  v1::EventBatch copy = batch;
  copy.clear_sequence();
  const std::string body = copy.SerializeAsString();
  if (bytes_ + body.size() + 16 > bound) return false;
  Entry entry = Frame(body, static_cast<uint64_t>(copy.kind_size()), next_sequence_++);
  bytes_ += entry.message.capacity();
  entries_.push_back(std::move(entry));
  return true;
}

uint64_t BatchQueue::SetMessageLimit(uint64_t max_message_bytes) {
  if (max_message_bytes > 0) {
    max_message_bytes_ =
        std::min<uint64_t>(max_message_bytes, static_cast<uint64_t>(kMaxMessageBytes));
  }
  const uint64_t limit = BodyLimit();
  const bool fits = std::all_of(entries_.begin(), entries_.end(),
                                [&](const Entry& entry) { return entry.body_size <= limit; });
  if (fits) return 0;
  std::deque<Entry> old;
  old.swap(entries_);
  bytes_ = 0;
  next_to_send_ = 0;
  next_sequence_ = old.front().sequence;
  uint64_t too_large = 0;
  for (Entry& entry : old) {
    EncodedBatch body;
    body.events = entry.events;
    body.bytes = entry.message.substr(entry.body_offset, entry.body_size);
    entry.message = std::string();  // memory back before the pieces take theirs
    // Within the memory budget still: the pieces hold what the batch held
    // plus a string table each.
    for (EncodedBatch& piece : Cut(std::move(body), &too_large)) {
      Entry refit = Frame(piece.bytes, piece.events, next_sequence_++);
      bytes_ += refit.message.capacity();
      entries_.push_back(std::move(refit));
    }
  }
  Add(dropped_buffer_full_, too_large);
  return too_large;
}

void BatchQueue::Acknowledge(uint64_t up_to_sequence) {
  while (!entries_.empty() && entries_.front().sequence <= up_to_sequence) {
    Add(events_acked_, entries_.front().events);
    Add(batches_acked_, 1);
    bytes_ -= entries_.front().message.capacity();
    entries_.pop_front();
    if (next_to_send_ > 0) --next_to_send_;
  }
}

std::optional<uint64_t> BatchQueue::Refuse(uint64_t sequence) {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), sequence,
                       [](const Entry& entry, uint64_t wanted) { return entry.sequence < wanted; });
  if (it == entries_.end() || it->sequence != sequence) return std::nullopt;
  const uint64_t events = it->events;
  Add(events_refused_, events);
  bytes_ -= it->message.capacity();
  const auto index = static_cast<size_t>(it - entries_.begin());
  entries_.erase(it);
  if (index < next_to_send_) --next_to_send_;
  return events;
}

uint64_t BatchQueue::unacknowledged_events() const {
  uint64_t events = 0;
  for (const Entry& entry : entries_) events += entry.events;
  return events;
}

void BatchQueue::Clear() {
  entries_.clear();
  next_to_send_ = 0;
  bytes_ = 0;
}

BatchQueue::Counters BatchQueue::counters() const {
  Counters c;
  c.dropped_buffer_full = dropped_buffer_full_.load(std::memory_order_relaxed);
  c.events_acked = events_acked_.load(std::memory_order_relaxed);
  c.batches_acked = batches_acked_.load(std::memory_order_relaxed);
  c.events_refused = events_refused_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace trainscope::agent
