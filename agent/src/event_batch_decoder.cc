#include "trainscope/agent/event_batch_decoder.h"

#include "absl/strings/str_cat.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {

absl::StatusOr<std::vector<DecodedEvent>> DecodeEventBatch(const v1::EventBatch& batch) {
  if (absl::Status s = protocol::CheckEventBatchColumns(batch, "EventBatch."); !s.ok()) return s;
  const int n = batch.kind_size();
  const auto string_at = [&](absl::string_view column, int i,
                             uint32_t index) -> absl::StatusOr<std::string> {
    if (index >= static_cast<uint32_t>(batch.strings_size())) {
      return absl::InvalidArgumentError(absl::StrCat("EventBatch.", column, "[", i, "] = ", index,
                                                     ": expected an index below strings_size ",
                                                     batch.strings_size()));
    }
    return batch.strings(static_cast<int>(index));
  };

  std::vector<DecodedEvent> events;
  events.reserve(static_cast<size_t>(n));
  uint64_t start = static_cast<uint64_t>(batch.base_time_ns());
  int collective = 0;
  int gpu = 0;
  for (int i = 0; i < n; ++i) {
    DecodedEvent event;
    event.kind = static_cast<EventKind>(batch.kind(i));
    start += static_cast<uint64_t>(batch.start_delta_ns(i));
    event.start_ns = static_cast<int64_t>(start);
    event.end_ns = static_cast<int64_t>(start + batch.duration_ns(i));
    event.value = batch.value(i);
    event.detail = batch.detail(i);
    event.thread = batch.thread(i);
    absl::StatusOr<std::string> name = string_at("name", i, batch.name(i));
    if (!name.ok()) return name.status();
    event.name = *std::move(name);
    if (protocol::IsGpuKind(batch.kind(i))) {
      event.gpu_device = batch.gpu_device(gpu);
      event.gpu_stream = batch.gpu_stream(gpu);
      event.correlation = batch.gpu_correlation(gpu);
      if (event.correlation != 0) {
        event.launch_ns = event.start_ns + batch.gpu_launch_delta_ns(gpu);
        absl::StatusOr<std::string> op = string_at("gpu_launch_op", gpu, batch.gpu_launch_op(gpu));
        if (!op.ok()) return op.status();
        event.launch_op = *std::move(op);
      }
      ++gpu;
    }
    if (protocol::IsCollectiveKind(batch.kind(i))) {
      absl::StatusOr<std::string> group = string_at("group", collective, batch.group(collective));
      if (!group.ok()) return group.status();
      event.group = *std::move(group);
      event.group_sequence = batch.group_sequence(collective);
      event.peer = batch.peer(collective);
      ++collective;
    }
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace trainscope::agent
