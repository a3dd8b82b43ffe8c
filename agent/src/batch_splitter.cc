#include "batch_splitter.h"

#include <utility>

#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::agent {

namespace {

// Events [begin, end) of `batch` as a batch of their own. `collective_begin`
// and `gpu_begin`: how many collective and GPU events precede `begin`.
v1::EventBatch Slice(const v1::EventBatch& batch, int begin, int end, int collective_begin,
                     int gpu_begin, bool with_loss_reports) {
  v1::EventBatch out;
  out.set_sequence(batch.sequence());
  *out.mutable_drops() = batch.drops();
  if (with_loss_reports) *out.mutable_loss_reports() = batch.loss_reports();

  // Wrapping sums, as the encoder wrote the deltas.
  uint64_t base = static_cast<uint64_t>(batch.base_time_ns());
  for (int i = 0; i < begin; ++i) base += static_cast<uint64_t>(batch.start_delta_ns(i));
  out.set_base_time_ns(static_cast<int64_t>(base));

  std::vector<int64_t> remap(static_cast<size_t>(batch.strings_size()), -1);
  out.add_strings(batch.strings_size() > 0 ? batch.strings(0) : std::string());
  if (!remap.empty()) remap[0] = 0;
  const auto string_index = [&](uint32_t index) -> uint32_t {
    if (index >= remap.size()) return index;  // invalid already: the collector says so
    if (remap[index] < 0) {
      remap[index] = out.strings_size();
      out.add_strings(batch.strings(static_cast<int>(index)));
    }
    return static_cast<uint32_t>(remap[index]);
  };

  int collective = collective_begin;
  int gpu = gpu_begin;
  for (int i = begin; i < end; ++i) {
    const int kind = batch.kind(i);
    out.add_kind(static_cast<v1::EventKind>(kind));
    out.add_start_delta_ns(batch.start_delta_ns(i));
    out.add_duration_ns(batch.duration_ns(i));
    out.add_name(string_index(batch.name(i)));
    out.add_thread(batch.thread(i));
    out.add_detail(batch.detail(i));
    out.add_value(batch.value(i));
    if (protocol::IsCollectiveKind(kind)) {
      out.add_group(string_index(batch.group(collective)));
      out.add_group_sequence(batch.group_sequence(collective));
      out.add_peer(batch.peer(collective));
      ++collective;
    }
    if (protocol::IsGpuKind(kind)) {
      out.add_gpu_device(batch.gpu_device(gpu));
      out.add_gpu_stream(batch.gpu_stream(gpu));
      out.add_gpu_correlation(batch.gpu_correlation(gpu));
      out.add_gpu_launch_delta_ns(batch.gpu_launch_delta_ns(gpu));
      out.add_gpu_launch_op(string_index(batch.gpu_launch_op(gpu)));
      ++gpu;
    }
  }
  return out;
}

void SplitInto(v1::EventBatch batch, uint64_t max_bytes, BatchSplit* split) {
  const int events = batch.kind_size();
  if (batch.ByteSizeLong() <= max_bytes || events == 0) {
    split->batches.push_back(std::move(batch));
    return;
  }
  if (events == 1) {
    ++split->events_too_large;
    if (batch.loss_reports_size() > 0) {  // the reports still go
      v1::EventBatch reports;
      reports.set_sequence(batch.sequence());
      *reports.mutable_drops() = batch.drops();
      *reports.mutable_loss_reports() = batch.loss_reports();
      reports.add_strings();
      split->batches.push_back(std::move(reports));
    }
    return;
  }
  const int middle = events / 2;
  int collectives = 0;
  int gpus = 0;
  for (int i = 0; i < middle; ++i) {
    collectives += protocol::IsCollectiveKind(batch.kind(i)) ? 1 : 0;
    gpus += protocol::IsGpuKind(batch.kind(i)) ? 1 : 0;
  }
  v1::EventBatch first = Slice(batch, 0, middle, 0, 0, /*with_loss_reports=*/true);
  v1::EventBatch second = Slice(batch, middle, events, collectives, gpus, false);
  batch.Clear();  // memory back before recursing
  SplitInto(std::move(first), max_bytes, split);
  SplitInto(std::move(second), max_bytes, split);
}

}  // namespace

BatchSplit SplitBatch(v1::EventBatch batch, uint64_t max_bytes) {
  BatchSplit split;
  // Columns of the wrong length cannot be cut by event: sent whole, the
  // collector's validator names the bad column.
  if (batch.ByteSizeLong() <= max_bytes || !protocol::CheckEventBatchColumns(batch).ok()) {
    split.batches.push_back(std::move(batch));
    return split;
  }
  SplitInto(std::move(batch), max_bytes, &split);
  return split;
}

}  // namespace trainscope::agent
