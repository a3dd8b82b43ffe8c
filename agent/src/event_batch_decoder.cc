#include "trainscope/agent/event_batch_decoder.h"

#include "absl/strings/str_cat.h"

namespace trainscope::agent {

absl::StatusOr<std::vector<DecodedEvent>> DecodeEventBatch(const v1::EventBatch& batch) {
  const int n = batch.kind_size();
  const auto column_size = [&](absl::string_view column, int size, int expected) -> absl::Status {
    if (size == expected) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("EventBatch.", column, " has ", size, " entries: expected ", expected));
  };
  for (const auto& [column, size] :
       {std::pair<absl::string_view, int>{"start_delta_ns", batch.start_delta_ns_size()},
        {"duration_ns", batch.duration_ns_size()},
        {"name", batch.name_size()},
        {"thread", batch.thread_size()},
        {"detail", batch.detail_size()},
        {"value", batch.value_size()}}) {
    if (absl::Status s = column_size(column, size, n); !s.ok()) return s;
  }
  int collectives = 0;
  for (int i = 0; i < n; ++i) collectives += batch.kind(i) == v1::EVENT_KIND_COLLECTIVE;
  for (const auto& [column, size] : {std::pair<absl::string_view, int>{"group", batch.group_size()},
                                     {"group_sequence", batch.group_sequence_size()},
                                     {"peer", batch.peer_size()}}) {
    if (absl::Status s = column_size(column, size, collectives); !s.ok()) return s;
  }
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
    if (batch.kind(i) == v1::EVENT_KIND_COLLECTIVE) {
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
