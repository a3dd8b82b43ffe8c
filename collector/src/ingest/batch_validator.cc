#include "trainscope/collector/ingest/batch_validator.h"

#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/collector/ingest/loss_report_validator.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::collector {

BatchValidator::BatchValidator(uint32_t world_size, BatchLimits limits)
    : world_size_(world_size), limits_(limits) {}

bool BatchValidator::LastTime(uint32_t thread, int64_t* time_ns) const {
  auto it = last_end_by_thread_.find(thread);
  if (it == last_end_by_thread_.end()) return false;
  *time_ns = it->second;
  return true;
}

absl::Status BatchValidator::Validate(const v1::EventBatch& batch) {
  const uint64_t seq = batch.sequence();
  auto invalid = [seq](absl::string_view cause, absl::string_view what) {
    return BadInput(absl::StatusCode::kInvalidArgument, cause,
                    absl::StrCat("batch ", seq, ": ", what));
  };
  const int n = batch.kind_size();
  if (n == 0 && batch.loss_reports_size() == 0) {
    return invalid("batch.kind", absl::StrCat("has no events and no loss reports; expected 1 to ",
                                              limits_.max_events, " events"));
  }
  if (absl::Status s = ValidateLossReports(batch); !s.ok()) return s;
  if (static_cast<uint32_t>(n) > limits_.max_events) {
    return invalid("batch.kind",
                   absl::StrCat("has ", n, " events; at most ", limits_.max_events, " per batch"));
  }
  std::string bad_column;
  if (absl::Status s = protocol::CheckEventBatchColumns(batch, "column ", &bad_column); !s.ok()) {
    return invalid(absl::StrCat("batch.", bad_column), s.message());
  }
  for (int i = 0; i < n; ++i) {
    const int kind = batch.kind(i);
    if (kind == v1::EVENT_KIND_UNSPECIFIED || !v1::EventKind_IsValid(kind)) {
      return invalid("batch.kind", absl::StrCat("event ", i, " has kind ", kind,
                                                "; expected 1 to 7 (trainscope.v1.EventKind)"));
    }
  }
  const uint32_t strings = static_cast<uint32_t>(batch.strings_size());
  for (uint32_t s = 0; s < strings; ++s) {
    if (batch.strings(s).size() > limits_.max_string_bytes) {
      return invalid("batch.strings", absl::StrCat("strings[", s, "] is ", batch.strings(s).size(),
                                                   " bytes; at most ", limits_.max_string_bytes));
    }
  }

  // Completion times per thread, staged so that a refused batch changes nothing.
  absl::flat_hash_map<uint64_t, int64_t> staged;
  int64_t start = batch.base_time_ns();
  int c = 0;  // index into the collective columns
  int g = 0;  // index into the GPU columns
  for (int i = 0; i < n; ++i) {
    const int kind = batch.kind(i);
    if (batch.name(i) >= strings) {
      return invalid("batch.name",
                     absl::StrCat("event ", i, " has name index ", batch.name(i),
                                  ", out of range; the batch has ", strings, " strings"));
    }
    const uint32_t detail = batch.detail(i);
    switch (kind) {
      case v1::EVENT_KIND_COLLECTIVE:
      case v1::EVENT_KIND_GPU_COLLECTIVE:
        if (!v1::CollectiveKind_IsValid(static_cast<int>(detail))) {
          return invalid("batch.detail",
                         absl::StrCat("event ", i, " (collective) has detail ", detail,
                                      "; expected a trainscope.v1.CollectiveKind (0 to 11)"));
        }
        break;
      case v1::EVENT_KIND_PHASE_MARK:
        if (!v1::Phase_IsValid(static_cast<int>(detail))) {
          return invalid("batch.detail",
                         absl::StrCat("event ", i, " (phase mark) has detail ", detail,
                                      "; expected a trainscope.v1.Phase (0 to 4)"));
        }
        break;
      case v1::EVENT_KIND_OPERATOR:
      case v1::EVENT_KIND_OPERATOR_BEGIN:
      case v1::EVENT_KIND_OPERATOR_END:
        if (detail > (v1::OPERATOR_SCOPE_FORWARD | v1::OPERATOR_SCOPE_BACKWARD)) {
          return invalid("batch.detail",
                         absl::StrCat("event ", i, " (operator) has detail ", detail,
                                      "; expected OperatorScope bits (0 to 3)"));
        }
        break;
      case v1::EVENT_KIND_GPU_MEMCPY:
        if (!v1::CopyKind_IsValid(static_cast<int>(detail))) {
          return invalid("batch.detail",
                         absl::StrCat("event ", i, " (GPU copy) has detail ", detail,
                                      "; expected a trainscope.v1.CopyKind (0 to 5)"));
        }
        break;
      case v1::EVENT_KIND_GPU_RUNTIME:
        if (!v1::RuntimeCall_IsValid(static_cast<int>(detail))) {
          return invalid("batch.detail",
                         absl::StrCat("event ", i, " (GPU runtime call) has detail ", detail,
                                      "; expected a trainscope.v1.RuntimeCall (0 to 3)"));
        }
        break;
      default:
        break;
    }
    if (protocol::IsGpuKind(kind)) {
      if (batch.gpu_correlation(g) != 0 && batch.gpu_launch_op(g) >= strings) {
        return invalid("batch.gpu_launch_op",
                       absl::StrCat("GPU event ", i, " has launch operator index ",
                                    batch.gpu_launch_op(g), ", out of range; the batch has ",
                                    strings, " strings"));
      }
      if (batch.gpu_launch_delta_ns(g) > 0) {
        return invalid("batch.gpu_launch_delta_ns",
                       absl::StrCat("GPU event ", i, " was launched ",
                                    batch.gpu_launch_delta_ns(g),
                                    " ns after it started; expected a launch at or before it"));
      }
    }
    if (protocol::IsCollectiveKind(kind)) {
      if (batch.group(c) >= strings) {
        return invalid("batch.group",
                       absl::StrCat("collective event ", i, " has group index ", batch.group(c),
                                    ", out of range; the batch has ", strings, " strings"));
      }
      const int32_t peer = batch.peer(c);
      if (peer < -1 || (peer >= 0 && static_cast<uint32_t>(peer) >= world_size_)) {
        return invalid("batch.peer",
                       absl::StrCat("collective event ", i, " has peer ", peer,
                                    "; expected -1 (none) or a rank below ", world_size_));
      }
      ++c;
    }
    const uint64_t duration = batch.duration_ns(i);
    if (duration >= limits_.max_duration_ns) {
      return invalid("batch.duration_ns",
                     absl::StrCat("event ", i, " lasts ", duration, " ns; expected less than ",
                                  limits_.max_duration_ns, " ns (one day)"));
    }
    int64_t end = 0;
    if (__builtin_add_overflow(start, batch.start_delta_ns(i), &start) ||
        __builtin_add_overflow(start, static_cast<int64_t>(duration), &end)) {
      return invalid("batch.start_delta_ns",
                     absl::StrCat("event ", i, ": its time overflows 64-bit nanoseconds"));
    }
    // Phase marks summarise a span that may be closed after later events were
    // recorded (forward ends when backward starts), so they are not ordered.
    // Runtime calls come from the GPU tracer's buffers, seconds after the
    // operators of their thread were sent, so they are not ordered either.
    if (kind == v1::EVENT_KIND_PHASE_MARK || kind == v1::EVENT_KIND_GPU_RUNTIME) continue;
    // Device work is ordered per stream, not per thread (its thread is 0):
    // streams key the map above the range of OS thread ids.
    const uint64_t thread =
        protocol::IsGpuKind(kind)
            ? (uint64_t{1} << 63) | (uint64_t{batch.gpu_device(g)} << 32) | batch.gpu_stream(g)
            : batch.thread(i);
    if (protocol::IsGpuKind(kind)) ++g;
    int64_t previous = 0;
    bool has_previous = false;
    if (auto it = staged.find(thread); it != staged.end()) {
      previous = it->second;
      has_previous = true;
    } else if (auto jt = last_end_by_thread_.find(thread); jt != last_end_by_thread_.end()) {
      previous = jt->second;
      has_previous = true;
    }
    if (has_previous && end < previous) {
      return invalid("batch.timestamps",
                     absl::StrCat("event ", i, " on thread ", thread, " ends at ", end,
                                  " ns, before that thread's previous event (", previous,
                                  " ns); timestamps must not go backwards within a thread"));
    }
    staged[thread] = end;
  }
  for (const auto& [thread, end] : staged) last_end_by_thread_[thread] = end;
  return absl::OkStatus();
}

}  // namespace trainscope::collector
