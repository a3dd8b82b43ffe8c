#include "trainscope/proto/event_batch_columns.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::protocol {

int CountCollectives(const v1::EventBatch& batch) {
  int collectives = 0;
  for (int kind : batch.kind()) collectives += IsCollectiveKind(kind);
  return collectives;
}

int CountGpuEvents(const v1::EventBatch& batch) {
  int gpu_events = 0;
  for (int kind : batch.kind()) gpu_events += IsGpuKind(kind);
  return gpu_events;
}

absl::Status CheckEventBatchColumns(const v1::EventBatch& batch, absl::string_view column_prefix,
                                    std::string* bad_column) {
  const auto check = [&](absl::string_view column, int size, int expected,
                         absl::string_view per) -> absl::Status {
    if (size == expected) return absl::OkStatus();
    if (bad_column != nullptr) *bad_column = std::string(column);
    return absl::InvalidArgumentError(absl::StrCat(column_prefix, column, " has ", size,
                                                   " entries, expected ", expected, " (one per ",
                                                   per, ")"));
  };
  const int events = batch.kind_size();
  const std::pair<absl::string_view, int> per_event[] = {
      {"start_delta_ns", batch.start_delta_ns_size()},
      {"duration_ns", batch.duration_ns_size()},
      {"name", batch.name_size()},
      {"thread", batch.thread_size()},
      {"detail", batch.detail_size()},
      {"value", batch.value_size()},
  };
  for (const auto& [column, size] : per_event) {
    if (absl::Status s = check(column, size, events, "event"); !s.ok()) return s;
  }
  const int collectives = CountCollectives(batch);
  const std::pair<absl::string_view, int> per_collective[] = {
      {"group", batch.group_size()},
      {"group_sequence", batch.group_sequence_size()},
      {"peer", batch.peer_size()},
  };
  for (const auto& [column, size] : per_collective) {
    if (absl::Status s = check(column, size, collectives, "collective event"); !s.ok()) return s;
  }
  const int gpu_events = CountGpuEvents(batch);
  const std::pair<absl::string_view, int> per_gpu_event[] = {
      {"gpu_device", batch.gpu_device_size()},
      {"gpu_stream", batch.gpu_stream_size()},
      {"gpu_correlation", batch.gpu_correlation_size()},
      {"gpu_launch_delta_ns", batch.gpu_launch_delta_ns_size()},
      {"gpu_launch_op", batch.gpu_launch_op_size()},
  };
  for (const auto& [column, size] : per_gpu_event) {
    if (absl::Status s = check(column, size, gpu_events, "GPU event"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace trainscope::protocol
