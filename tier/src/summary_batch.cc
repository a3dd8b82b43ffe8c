#include "trainscope/tier/summary_batch.h"

#include <cstdint>
#include <vector>

#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::tier {

bool KeptInSummary(int kind) {
  return kind == v1::EVENT_KIND_STEP_MARK || protocol::IsCollectiveKind(kind);
}

v1::EventBatch SummaryBatch(const v1::EventBatch& batch) {
  v1::EventBatch out;
  out.set_sequence(batch.sequence());
  out.set_base_time_ns(batch.base_time_ns());
  *out.mutable_drops() = batch.drops();
  *out.mutable_loss_reports() = batch.loss_reports();

  // Old string index -> new one, made on first use.
  std::vector<int64_t> remap(batch.strings_size(), -1);
  auto str = [&](uint32_t index) -> uint32_t {
    if (index >= remap.size()) return index;  // validated batches never get here
    if (remap[index] < 0) {
      remap[index] = out.strings_size();
      out.add_strings(batch.strings(index));
    }
    return static_cast<uint32_t>(remap[index]);
  };

  int64_t start = batch.base_time_ns();
  int64_t previous_kept_start = batch.base_time_ns();
  int collective = 0;  // index into the collective columns
  int gpu = 0;         // index into the GPU columns
  for (int i = 0; i < batch.kind_size(); ++i) {
    const int kind = batch.kind(i);
    start += batch.start_delta_ns(i);
    const bool is_collective = protocol::IsCollectiveKind(kind);
    const bool is_gpu = protocol::IsGpuKind(kind);
    if (KeptInSummary(kind)) {
      out.add_kind(batch.kind(i));
      out.add_start_delta_ns(start - previous_kept_start);
      previous_kept_start = start;
      out.add_duration_ns(batch.duration_ns(i));
      out.add_name(str(batch.name(i)));
      out.add_thread(batch.thread(i));
      out.add_detail(batch.detail(i));
      out.add_value(batch.value(i));
      if (is_collective) {
        out.add_group(str(batch.group(collective)));
        out.add_group_sequence(batch.group_sequence(collective));
        out.add_peer(batch.peer(collective));
      }
      if (is_gpu && gpu < batch.gpu_device_size()) {
        out.add_gpu_device(batch.gpu_device(gpu));
        out.add_gpu_stream(batch.gpu_stream(gpu));
        out.add_gpu_correlation(batch.gpu_correlation(gpu));
        out.add_gpu_launch_delta_ns(batch.gpu_launch_delta_ns(gpu));
        out.add_gpu_launch_op(str(batch.gpu_launch_op(gpu)));
      }
    }
    if (is_collective) ++collective;
    if (is_gpu) ++gpu;
  }
  return out;
}

}  // namespace trainscope::tier
