// Test helper: what a stored job log holds, counted from its records (the
// Hellos and every batch's columns), independently of the analysis.
//
// Usage:
//   StoredLogCensus census = CountStoredLog(data_dir / "jobs" / "job");
//   EXPECT_EQ(census.kinds[v1::EVENT_KIND_GPU_KERNEL], 42u);
#ifndef TRAINSCOPE_TESTS_COLLECTOR_IMPORT_STORED_LOG_CENSUS_H_
#define TRAINSCOPE_TESTS_COLLECTOR_IMPORT_STORED_LOG_CENSUS_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainscope/collector/store/log_reader.h"
#include "trainscope/proto/event_batch_columns.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

struct StoredLogCensus {
  std::vector<v1::Hello> hellos;
  std::map<int, uint64_t> kinds;  // EventKind -> events
  std::map<uint32_t, uint64_t> events_by_rank;
  uint64_t gpu_events = 0;
  uint64_t gpu_linked = 0;  // gpu_correlation != 0
  uint64_t gpu_collectives_with_group = 0;
  uint64_t bad_batches = 0;         // failing the column rule
  uint64_t launch_after_start = 0;  // gpu_launch_delta_ns > 0
  std::vector<int64_t> step_marks_ns;
  std::vector<uint64_t> step_values;
  // (group, sequence) of the CPU collectives, per rank.
  std::map<uint32_t, std::vector<std::pair<std::string, uint64_t>>> cpu_collectives;
  std::map<uint32_t, std::vector<std::pair<std::string, uint64_t>>> gpu_collectives;
};

inline StoredLogCensus CountStoredLog(const std::filesystem::path& job_dir) {
  StoredLogCensus c;
  absl::StatusOr<LogReader> reader = LogReader::Open(job_dir);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return c;
  absl::Status read = reader->ForEach(
      [&](const v1::LogRecord& r) {
        if (r.has_stream_opened()) c.hellos.push_back(r.stream_opened().hello());
        if (!r.has_batch()) return true;
        const v1::EventBatch& b = r.batch().batch();
        if (!protocol::CheckEventBatchColumns(b).ok()) {
          ++c.bad_batches;
          return true;
        }
        int collective = 0;
        int gpu = 0;
        int64_t t = b.base_time_ns();
        for (int i = 0; i < b.kind_size(); ++i) {
          t += b.start_delta_ns(i);
          const int kind = b.kind(i);
          ++c.kinds[kind];
          ++c.events_by_rank[r.batch().rank()];
          if (kind == v1::EVENT_KIND_STEP_MARK) {
            c.step_marks_ns.push_back(t);
            c.step_values.push_back(b.value(i));
          }
          if (protocol::IsCollectiveKind(kind)) {
            const auto entry = std::make_pair(b.strings(static_cast<int>(b.group(collective))),
                                              b.group_sequence(collective));
            (kind == v1::EVENT_KIND_COLLECTIVE ? c.cpu_collectives
                                               : c.gpu_collectives)[r.batch().rank()]
                .push_back(entry);
            ++collective;
          }
          if (protocol::IsGpuKind(kind)) {
            ++c.gpu_events;
            if (b.gpu_correlation(gpu) != 0) ++c.gpu_linked;
            if (b.gpu_launch_delta_ns(gpu) > 0) ++c.launch_after_start;
            ++gpu;
          }
        }
        return true;
      },
      nullptr);
  EXPECT_TRUE(read.ok()) << read;
  return c;
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_TESTS_COLLECTOR_IMPORT_STORED_LOG_CENSUS_H_
